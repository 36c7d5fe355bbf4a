"""The notebooks in docs/ run (every code cell, in order) and their .ipynb match their sources."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_spec = importlib.util.spec_from_file_location("docs_notebook", DOCS / "notebook.py")
notebook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(notebook)

SOURCES = sorted(p for p in DOCS.glob("*.py") if p.name != "notebook.py" and p.read_text().startswith("# %%"))


def test_there_is_a_notebook():
    assert [p.name for p in SOURCES] and all(p.with_suffix(".ipynb").exists() for p in SOURCES)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_notebook_runs(source):
    cells = notebook.read_cells(source)
    assert sum(kind == "code" for kind, _ in cells) >= 5
    notebook.execute(cells)  # raises, naming the cell, if any cell fails or any assertion in it does


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_rendered_notebook_matches_its_source(source):
    rendered = notebook.notebook_sources(source.with_suffix(".ipynb"))
    assert rendered == notebook.read_cells(source), f"re-render it: python docs/notebook.py {source}"
