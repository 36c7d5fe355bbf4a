"""Runs the golden tests of ``tests/filecheck`` (``// RUN:`` lines, ``// CHECK:`` lines) with lit."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "filecheck"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("lit") is None or importlib.util.find_spec("filecheck") is None,
    reason="the golden tests need lit and filecheck (pip install lit filecheck)",
)


def test_there_are_golden_tests():
    tests = sorted(p.name for p in GOLDEN.glob("*.mlir"))
    assert len(tests) >= 8, tests
    for name in tests:
        text = (GOLDEN / name).read_text()
        assert "// RUN:" in text and "// CHECK" in text, name


def test_lit_golden_tests_pass():
    # ``lit`` has no ``__main__``; run its entry point with this interpreter.
    proc = subprocess.run([sys.executable, "-c", "import sys; from lit.main import main; sys.exit(main())",
                           "-q", str(GOLDEN)], capture_output=True, text=True, timeout=300, cwd=HERE.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
