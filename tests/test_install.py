"""What an install guarantees: ml_dtypes is imported only when bf16 is used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("affine_ir", "analysis", "transforms", "codegen", "runtime")

# Run first in the child: every import of cuda-python (``cuda``, ``cuda.bindings``,
# ``cuda.pathfinder``) or of the nvidia wheels fails as if they were not installed.
HIDE_CUDA = """
import importlib.abc, sys

class _HideCuda(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("cuda", "nvidia"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _HideCuda())
"""


def run_child(body: str, hide_cuda: bool = False, tmp_path: Path | None = None) -> dict:
    """Run ``body`` in a fresh interpreter (the worktree first on the path); it prints one JSON
    object as its last line, returned here."""
    script = (HIDE_CUDA if hide_cuda else "") + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if tmp_path is not None:
        env["AFFINE_IR_CACHE"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- ml_dtypes only for bf16 ------------------------------------------------------------------------------

def test_ml_dtypes_is_imported_only_when_bf16_is_used(tmp_path):
    got = run_child("""
        import contextlib, io, json, sys
        import numpy as np
        import affine_ir as air, runtime, transforms
        from runtime.cli import affine_opt_main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                affine_opt_main(["--help"])
            except SystemExit:
                pass
        res = {"after_help": "ml_dtypes" in sys.modules}
        m = transforms.PassManager.parse("canonicalize,affine-loop-tile{tile-size=2}").run(air.library.matmul(4, 4, 4))
        A = np.ones((4, 4), np.float32); C = np.zeros((4, 4), np.float32)
        air.interpret(m, A, A, C)
        runtime.compile(m, target="cpu")(A, A, C)
        res["after_f32"] = "ml_dtypes" in sys.modules
        bf = air.library.matmul(4, 4, 4, dtype="bf16")
        res["after_bf16_module"] = "ml_dtypes" in sys.modules
        from affine_ir.floats import bfloat16_dtype
        X = np.ones((4, 4), bfloat16_dtype()); Z = np.zeros((4, 4), bfloat16_dtype())
        air.interpret(bf, X, X, Z)
        res["bf16_result"] = float(Z[0, 0])
        print(json.dumps(res))
    """, tmp_path=tmp_path)
    assert got == {"after_help": False, "after_f32": False, "after_bf16_module": False, "bf16_result": 4.0}


