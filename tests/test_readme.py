"""The README works as written: its Python snippets run, in order, in one namespace (in a
temporary directory: the first snippet writes the ``kernel.mlir`` the others use), and its
shell commands name real entry points, files, modules and options.

A snippet that cannot run here (e.g. one that needs a GPU) starts with the line
``# readme-test: skip (<why>)`` and is only compiled; none does today."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIP_MARK = "# readme-test: skip"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def fenced_blocks(text: str, language: str) -> list[tuple[int, str]]:
    """(first line number of the code, code) of every ```language block of ``text``."""
    return [(text[:m.start(2)].count("\n") + 1, m.group(2)) for m in _FENCE.finditer(text) if m.group(1) == language]


def shell_commands(block: str) -> list[list[str]]:
    """The simple commands of a shell block: comments dropped, split at ``&&``, ``||``, ``;``
    and ``|``, leading ``VAR=value`` assignments dropped."""
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for w in [*words, "&&"]:
            if w in ("&&", "||", ";", "|"):
                while current and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", current[0]):
                    current.pop(0)
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(w)
    return commands


def test_the_readme_has_snippets_and_commands():
    text = README.read_text()
    assert len(fenced_blocks(text, "python")) >= 4 and len(fenced_blocks(text, "bash")) >= 3


def test_python_snippets_run_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for line, code in fenced_blocks(README.read_text(), "python"):
        compiled = compile("\n" * (line - 1) + code, str(README), "exec")  # tracebacks point at README lines
        if code.lstrip().startswith(SKIP_MARK):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compiled, namespace)


def _help(entry_point: str) -> str:
    """The ``--help`` text of the console script ``module:function``."""
    module, function = entry_point.split(":")
    out = subprocess.run([sys.executable, "-c", f"import sys; from {module} import {function}; sys.exit({function}())",
                          "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _check_python(args: list[str]) -> None:
    if args[0] == "-m":
        module = args[1]
        assert importlib.util.find_spec(module) is not None, f"python -m {module}: no such module"
    else:
        assert (ROOT / args[0]).is_file(), f"python {args[0]}: no such file"


def _check_tool(tool: str, args: list[str], help_text: str) -> None:
    for a in args:
        if a.startswith("-") and a != "-":
            flag = a.split("=", 1)[0].lstrip("-")
            assert re.search(rf"(^|[\s\[,])--?{re.escape(flag)}\b", help_text, re.M), f"{tool} {a}: unknown option"


def test_shell_commands_name_real_entry_points():
    tomllib = pytest.importorskip("tomllib")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    helps = {name: _help(entry_point) for name, entry_point in scripts.items()}
    seen = set()
    for _line, block in fenced_blocks(README.read_text(), "bash"):
        for cmd in shell_commands(block):
            head, args = cmd[0], cmd[1:]
            seen.add(head)
            if head in ("python", "python3"):
                _check_python(args)
            elif head in scripts:
                _check_tool(head, args, helps[head])
            elif head == ".":
                assert args == [".venv/bin/activate"], cmd
            else:
                pytest.fail(f"README command {' '.join(cmd)!r}: {head} is not an entry point of the project")
    assert {"python3", "python", "affine-opt", "affine-run"} <= seen


def test_the_first_command_creates_a_virtual_environment():
    _line, first = fenced_blocks(README.read_text(), "bash")[0]
    cmds = shell_commands(first)
    assert cmds[0][:3] == ["python3", "-m", "venv"] and cmds[1] == [".", ".venv/bin/activate"]
    assert ["python", "-m", "pip", "install", "-e", ".[test]"] in cmds


def test_ci_runs_the_readmes_test_command():
    _line, first = fenced_blocks(README.read_text(), "bash")[0]
    test_command = next(c for c in shell_commands(first) if c[:3] == ["python", "-m", "pytest"])
    ci = [c for c in shell_commands((ROOT / ".ci" / "run").read_text()) if c[:3] == ["python", "-m", "pytest"]]
    assert ci == [test_command]
    assert "install -q -e .[test]" in " ".join(" ".join(c) for c in shell_commands((ROOT / ".ci" / "run").read_text()))


def test_the_layout_lists_every_package_and_folder():
    text = README.read_text()
    layout = text[text.index("## Layout"):]
    layout = layout[:layout.index("```", layout.index("```") + 3)]
    listed = set(re.findall(r"^(\w+)/", layout, re.M))
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")
               and (p / "__init__.py").exists() or p.name in ("examples", "tests", "benchmarks", "docs")}
    assert folders <= listed, f"missing from the Layout section: {sorted(folders - listed)}"


def test_the_slow_marker_is_declared_and_names_real_tests():
    from conftest import SLOW_TESTS

    tomllib = pytest.importorskip("tomllib")

    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)
    files = sorted({t.split("::")[0] for t in SLOW_TESTS})
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow",
                          *(f"tests/{f}" for f in files)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    collected = {re.sub(r"\[.*", "", line.removeprefix("tests/")) for line in out.stdout.splitlines() if "::" in line}
    assert collected == SLOW_TESTS, out.stdout[-2000:]
