"""lit configuration for the golden tests: ``lit tests/filecheck`` (or ``python -m lit``).

Substitutions, after xDSL's:
  affine-opt            -> this checkout's ``python -m runtime.cli`` (no install needed)
  cuda-emit             -> ``python -m codegen.cuda`` (CUDA C of mapped IR, see codegen/cuda/__main__.py)
  FileCheck / filecheck -> the Python ``filecheck`` (``python -m filecheck`` if not on PATH)
  %roundtrip            -> ``affine-opt %s | affine-opt``: print, re-parse, print again
"""

# ruff: noqa: F821  (lit injects ``config``)
from __future__ import annotations

import os
import shutil
import sys

import lit.formats

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

config.name = "affine-ir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.test_source_root
config.environment["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
# lit passes HOME on: keep a RUN line that compiles out of the user's cache, as the suite does
for name in ("AFFINE_IR_CACHE", "XDG_CACHE_HOME"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

python = f'"{sys.executable}"'
filecheck = shutil.which("filecheck")
filecheck = f'"{filecheck}"' if filecheck else f"{python} -m filecheck"
# A tool name, not part of a path or a longer word (``tests/filecheck/x.mlir`` stays intact).
word = r"(?<![\w/.-]){}(?![\w/.-])"

config.substitutions.append(("%roundtrip", "affine-opt %s | affine-opt"))
config.substitutions.append((word.format("affine-opt"), f"{python} -m runtime.cli"))
config.substitutions.append((word.format("cuda-emit"), f"{python} -m codegen.cuda"))
config.substitutions.append((word.format("(?:FileCheck|filecheck)"), filecheck))
