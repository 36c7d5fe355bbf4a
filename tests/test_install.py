"""What an install guarantees: the project works without the ``cuda`` extra (cuda-python and the
nvidia wheels hidden from a fresh interpreter), ml_dtypes is imported only when bf16 is used,
and the package metadata (version, typing marker, license)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

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


# -- without the cuda extra -------------------------------------------------------------------------

def test_everything_but_cuda_works_without_the_cuda_extra(tmp_path):
    got = run_child("""
        import json, sys
        import numpy as np
        import affine_ir as air, analysis, codegen, runtime, transforms
        import runtime.cli, runtime.run_cli, runtime.cuda, runtime.cuda_driver, runtime.cuda_arrays, runtime.nvrtc
        res = {"gpu_available": runtime.gpu_available(), "reason": runtime.cuda_driver.gpu_unavailable_reason()}
        m = air.library.matmul(4, 3, 2)
        k = runtime.compile(m, target="auto")
        A, B = np.arange(8, dtype=np.float32).reshape(4, 2), np.ones((2, 3), np.float32)
        C = np.zeros((4, 3), np.float32)
        k(A, B, C)
        res["auto"] = [type(k).__name__, bool(np.array_equal(C, A @ B))]
        res["cuda_c"] = "__global__" in codegen.cuda.emit(transforms.PassManager.parse("gpu-map").run(m)).source
        try:
            runtime.compile(m, target="cuda")
            res["cuda"] = "compiled"
        except runtime.CompileError as e:
            res["cuda"] = str(e)
        res["cuda_loaded"] = sorted(n for n in sys.modules if n.partition(".")[0] in ("cuda", "nvidia"))
        print(json.dumps(res))
    """, hide_cuda=True, tmp_path=tmp_path)
    assert got["gpu_available"] is False and "affine-ir[cuda]" in got["reason"]
    assert got["auto"] == ["CPUExecutable", True]
    assert got["cuda_c"] is True
    assert "pip install 'affine-ir[cuda]'" in got["cuda"] and "cuda-python" in got["cuda"]
    assert got["cuda_loaded"] == []


def test_affine_run_names_the_extra_without_it(tmp_path):
    got = run_child("""
        import contextlib, io, json
        from runtime.run_cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                rc = main(["--op", "matmul:8,8,8", "--target", "cuda"])
            except SystemExit as e:
                rc = e.code
        print(json.dumps({"rc": rc, "stderr": err.getvalue()}))
    """, hide_cuda=True, tmp_path=tmp_path)
    assert got["rc"] not in (0, None)
    assert "affine-ir[cuda]" in got["stderr"] and "Traceback" not in got["stderr"]


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


# -- metadata ---------------------------------------------------------------------------------------------

def test_version_comes_from_the_package_metadata():
    import importlib.metadata

    import affine_ir

    try:
        want = importlib.metadata.version("affine-ir")
    except importlib.metadata.PackageNotFoundError:
        want = "0+unknown"
    assert affine_ir.__version__ == want


def test_every_package_is_typed_and_ships_its_marker():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = project["tool"]["setuptools"]["package-data"]
    for pkg in PACKAGES:
        assert (ROOT / pkg / "py.typed").is_file(), pkg
        assert "py.typed" in package_data.get(pkg, []) or "py.typed" in package_data.get("*", []), pkg


def test_license_and_extras_are_declared():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    cuda_names = ("cuda-bindings", "cuda-pathfinder", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-cuda-crt")
    assert not any(d.startswith(cuda_names) for d in project["dependencies"])
    assert any(d.startswith("platformdirs") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert all(any(d.startswith(n) for d in extras["cuda"]) for n in cuda_names)
    test = [Requirement(d) for d in extras["test"]]
    (self_ref,) = [r for r in test if r.name == "affine-ir"]
    assert self_ref.extras == {"cuda"}
    assert self_ref.marker.evaluate({"sys_platform": "linux"})
    assert not self_ref.marker.evaluate({"sys_platform": "darwin"})


def _shipped_files(package_data: dict) -> list[Path]:
    """What a wheel of the project holds: every package's modules and the files its
    ``package-data`` globs (and the ``"*"`` ones) name."""
    out = []
    for pkg in PACKAGES:
        out += sorted((ROOT / pkg).rglob("*.py"))
        for pattern in package_data.get(pkg, []) + package_data.get("*", []):
            out += sorted((ROOT / pkg).glob(pattern))
    return out


def test_the_fitted_gpu_model_ships_and_is_found_from_an_installed_copy(tmp_path):
    tomllib = pytest.importorskip("tomllib")
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = _shipped_files(package_data)
    data_files = sorted((ROOT / "analysis" / "data").glob("*.json"))
    assert data_files and set(data_files) <= set(shipped)
    site = tmp_path / "site-packages"
    for f in shipped:
        dest = site / f.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())
    script = textwrap.dedent("""
        import json
        import analysis.targets as t
        print(json.dumps({"file": t.__file__, "h200": t.H200.gpu_model is not None,
                          "configs": [list(c) for c in t.H200.schedule_model.tile_configs]}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    from analysis.targets import H200

    assert got["file"].startswith(str(site)) and got["h200"]
    assert got["configs"] == [list(c) for c in H200.schedule_model.tile_configs]
