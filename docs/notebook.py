"""Render a jupytext-style percent script into an executed ``.ipynb``, with no Jupyter needed.

The source of a notebook is a Python file whose cells start with ``# %%`` (code) or
``# %% [markdown]`` (markdown: every line a comment). This tool runs the code cells in
order in one namespace, captures what each prints and the value of its last expression
(its HTML form when it has ``_repr_html_``, else ``repr``), and writes nbformat-4 JSON.

    python docs/notebook.py docs/tiling_tutorial.py       # writes docs/tiling_tutorial.ipynb

``tests/test_notebooks.py`` executes the same cells in CI (so the notebook never rots) and
checks that the ``.ipynb`` holds exactly the cells of its source.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import sys
from pathlib import Path

__all__ = ["execute", "read_cells", "render"]


def read_cells(path: str | Path) -> list[tuple[str, str]]:
    """The cells of a percent-format script: ``(kind, source)`` with kind ``"code"`` or ``"markdown"``."""
    cells: list[tuple[str, list[str]]] = []
    for line in Path(path).read_text().splitlines():
        if line.startswith("# %%"):
            cells.append(("markdown" if "[markdown]" in line else "code", []))
        elif cells:
            cells[-1][1].append(line)
    out = []
    for kind, lines in cells:
        if kind == "markdown":
            lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines]
        text = "\n".join(lines).strip("\n")
        if text:
            out.append((kind, text))
    return out


def _run_cell(source: str, namespace: dict) -> tuple[str, object]:
    """Execute one cell; return what it printed and the value of its last expression (or None)."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    buf = io.StringIO()
    value = None
    with contextlib.redirect_stdout(buf):
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
    return buf.getvalue(), value


def execute(cells: list[tuple[str, str]]) -> list[tuple[str, object]]:
    """Run the code cells in order in one namespace; ``(printed, value)`` per code cell.

    An exception in a cell propagates with the cell's number added to its message.
    """
    namespace: dict = {"__name__": "__notebook__"}
    results = []
    code = [src for kind, src in cells if kind == "code"]
    for k, src in enumerate(code, 1):
        try:
            results.append(_run_cell(src, namespace))
        except Exception as e:
            raise RuntimeError(f"code cell {k} failed: {type(e).__name__}: {e}\n--- cell ---\n{src}") from e
    return results


def _outputs(printed: str, value: object) -> list[dict]:
    outs = []
    if printed:
        outs.append({"output_type": "stream", "name": "stdout", "text": printed.splitlines(keepends=True)})
    if value is not None:
        data = {"text/plain": repr(value).splitlines(keepends=True)}
        if hasattr(value, "_repr_html_"):
            data["text/html"] = value._repr_html_().splitlines(keepends=True)
        outs.append({"output_type": "execute_result", "execution_count": None, "data": data, "metadata": {}})
    return outs


def render(source: str | Path, target: str | Path | None = None) -> Path:
    """Execute the notebook script ``source`` and write the ``.ipynb`` (next to it unless ``target``)."""
    source = Path(source)
    target = Path(target) if target else source.with_suffix(".ipynb")
    cells = read_cells(source)
    results = iter(execute(cells))
    nb_cells = []
    for n, (kind, src) in enumerate(cells):
        cell = {"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True), "id": f"cell-{n}"}
        if kind == "code":
            printed, value = next(results)
            cell.update(execution_count=None, outputs=_outputs(printed, value))
        nb_cells.append(cell)
    nb = {"cells": nb_cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                         "name": "python3"},
                                          "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    target.write_text(json.dumps(nb, indent=1) + "\n")
    return target


def notebook_sources(path: str | Path) -> list[tuple[str, str]]:
    """The ``(kind, source)`` of every cell of an ``.ipynb``."""
    nb = json.loads(Path(path).read_text())
    return [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["docs/tiling_tutorial.py"]:
        print(f"wrote {render(arg)}")
