"""``affine-opt``: in-process through ``affine_opt_main`` and as a subprocess."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import affine_ir as air
from runtime.cli import affine_opt_main, split_input

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
func.func @shift(%A: memref<64xf32>, %B: memref<63xf32>) {
  affine.for %i = 0 to 63 {
    %a = affine.load %A[%i] : memref<64xf32>
    %b = affine.load %A[%i + 1] : memref<64xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %B[%i] : memref<63xf32>
  }
  return
}
"""

SPLIT = """\
func.func @first() {
  return
}
// -----
func.func @second(%x: f32) {
  %y = arith.addf %x, %x : f64
  return
}
// -----
func.func @third() {
  %c0 = arith.constant 0 : index
  return
}
"""


def run_main(argv, stdin: str | bytes | None = None, monkeypatch=None, capsys=None):
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = affine_opt_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def main(monkeypatch, capsys):
    return lambda argv, stdin=None: run_main(argv, stdin, monkeypatch, capsys)


def test_file_in_stdout_out(tmp_path, main):
    src = tmp_path / "shift.mlir"
    src.write_text(GOOD)
    code, out, err = main([str(src)])
    assert code == 0 and err == ""
    assert out == str(air.parse(GOOD))
    assert out.startswith("module {\n  func.func @shift(%A: memref<64xf32>, %B: memref<63xf32>) {")


def test_output_file_and_round_trip(tmp_path, main):
    src, dst, again = tmp_path / "in.mlir", tmp_path / "out.mlir", tmp_path / "again.mlir"
    src.write_text(GOOD)
    assert main([str(src), "-o", str(dst)]) == (0, "", "")
    assert main([str(dst), "-o", str(again)])[0] == 0
    assert dst.read_text() == again.read_text() == str(air.parse(GOOD))


def test_stdin(main):
    code, out, _ = main([], stdin=GOOD)
    assert code == 0 and "affine.for %i = 0 to 63 {" in out
    code, out, _ = main(["-"], stdin=GOOD)
    assert code == 0 and "affine.for %i = 0 to 63 {" in out


def test_errors_on_stderr_with_file_line_col(tmp_path, main):
    src = tmp_path / "bad.mlir"
    src.write_text(GOOD.replace("%i + 1", "%i + %q"))
    code, out, err = main([str(src)])
    assert code == 1 and out == ""
    assert err == f"{src}:4:30: error: use of undefined value '%q'\n"
    code, out, err = main([], stdin=GOOD.replace("arith.addf %a, %b : f32", "arith.addf %a, %b : i32"))
    assert code == 1 and err == "<stdin>:5:28: error: type mismatch: %a has type f32, but the op expects i32\n"


def test_split_input_file_reports_whole_file_lines_and_prints_other_chunks(tmp_path, main):
    src = tmp_path / "split.mlir"
    src.write_text(SPLIT)
    code, out, err = main([str(src), "-split-input-file"])
    assert code == 1
    assert err == f"{src}:6:26: error: type mismatch: %x has type f32, but the op expects f64\n"
    chunks = out.split("// -----\n")
    assert len(chunks) == 3 and chunks[1] == ""  # one output per chunk, empty for the failed one
    assert "func.func @first()" in chunks[0] and "%c0 = arith.constant 0 : index" in chunks[2]
    # without splitting, the markers are comments and the first error stops everything
    code, out, err = main([str(src)])
    assert code == 1 and out == "" and err.startswith(f"{src}:6:26: error: ")


def test_split_input_file_verify_error_line(tmp_path, main):
    text = "func.func @a() {\n  return\n}\n// -----\n// a comment line\nfunc.func @b() -> i32 {\n" \
           "  %c = arith.constant 1 : i64\n  return %c : i64\n}\n"
    src = tmp_path / "v.mlir"
    src.write_text(text)
    code, out, err = main(["--split-input-file", str(src)])
    assert code == 1 and "func.func @a()" in out
    assert err == f"{src}:8:3: error: 'func.return' op returns (i64) but @b declares (i32)\n"


def test_split_input_helper():
    assert split_input("a\n// -----\nb\nc\n// -----\n") == [("a\n", 0), ("b\nc\n", 2), ("", 5)]


def test_nonexistent_file_and_unreadable_output(tmp_path, main):
    code, out, err = main([str(tmp_path / "missing.mlir")])
    assert code == 1 and out == ""
    assert err == f"affine-opt: error: cannot read {tmp_path / 'missing.mlir'}: No such file or directory\n"
    src = tmp_path / "in.mlir"
    src.write_text(GOOD)
    code, _, err = main([str(src), "-o", str(tmp_path / "no" / "such" / "dir.mlir")])
    assert code == 1 and err.startswith("affine-opt: error: cannot write ")


def test_binary_input_is_an_error_not_a_traceback(tmp_path, main):
    src = tmp_path / "bin.mlir"
    src.write_bytes(b"func.func @f() {\xff\xfe}\n")
    code, _, err = main([str(src)])
    assert code == 1 and err.startswith("affine-opt: error: cannot read ") and "not UTF-8" in err


def test_help_and_version(main):
    code, out, _ = main(["--help"])
    assert code == 0
    for words in ("Parse, verify and print", "-split-input-file", "-o FILE", "file:line:col: error:", "stdin",
                  "exit status"):
        assert words in out
    code, out, _ = main(["--version"])
    assert code == 0 and out.startswith("affine-opt (affine-ir ")
    code, _, err = main(["--no-such-flag"])
    assert code == 2 and "unrecognized arguments" in err


def test_generic_form_is_refused(main):
    code, _, err = main(["-mlir-print-op-generic"], stdin=GOOD)
    assert code == 1 and "generic op form is not supported" in err


def test_no_verify_each_prints_unverified_ir(main):
    text = "func.func @f() -> i32 {\n  %c = arith.constant 1 : i64\n  return %c : i64\n}\n"
    assert main([], stdin=text)[0] == 1
    code, out, _ = main(["--no-verify-each"], stdin=text)
    assert code == 0 and "return %c : i64" in out


# -- the installed console script (or python -m runtime.cli) as a subprocess -----------------
def _command() -> list[str]:
    script = shutil.which("affine-opt")
    return [script] if script else [sys.executable, "-m", "runtime.cli"]


def _run(args, stdin=""):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(_command() + args, input=stdin, capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60)


def test_subprocess_round_trip_through_a_pipe():
    first = _run([], GOOD)
    assert first.returncode == 0 and first.stderr == ""
    second = _run(["-"], first.stdout)
    assert second.returncode == 0 and second.stdout == first.stdout


def test_subprocess_split_input_file_with_an_error(tmp_path):
    src = tmp_path / "split.mlir"
    src.write_text(SPLIT)
    proc = _run([str(src), "-split-input-file"])
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{src}:6:26: error: type mismatch: %x has type f32, but the op expects f64"
    assert proc.stdout.count("// -----") == 2 and "@first" in proc.stdout and "@third" in proc.stdout


def test_subprocess_version_and_missing_file(tmp_path):
    proc = _run(["--version"])
    assert proc.returncode == 0 and "affine-opt" in proc.stdout and "Traceback" not in proc.stderr
    proc = _run([str(tmp_path / "nope.mlir")])
    assert proc.returncode == 1 and "cannot read" in proc.stderr and "Traceback" not in proc.stderr


# -- affine-run ----------------------------------------------------------------------------------
def _affine_run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime.run_cli", *argv], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)


def test_affine_run_checks_a_library_op_on_the_cpu():
    r = _affine_run("--op", "matmul:24,16,8", "--target", "cpu", "--check", "--bench", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert "[compile ] target cpu" in r.stdout and "vs the interpreter: max |difference| 0 (ok" in r.stdout
    assert "[bench   ] median of 2 calls" in r.stdout


def test_affine_run_file_with_symbols(tmp_path):
    f = tmp_path / "k.mlir"
    f.write_text(str(air.library.elementwise_chain(["relu", "neg"], ("N",))))
    r = _affine_run(str(f), "--target", "cpu", "--sym", "N=37", "--check")
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_affine_run_bad_input_names_the_place(tmp_path):
    f = tmp_path / "bad.mlir"
    f.write_text("func.func @f(\n")
    r = _affine_run(str(f))
    assert r.returncode == 2 and "bad.mlir:2:1: error" in r.stderr
    r = _affine_run("--op", "nosuchop:1")
    assert r.returncode == 2 and "unknown op 'nosuchop'" in r.stderr


def test_affine_run_cuda_without_gpu_is_a_clear_error():
    import runtime

    if runtime.gpu_available():
        pytest.skip("a GPU is usable here")
    r = _affine_run("--op", "relu:8,8", "--target", "cuda")
    assert r.returncode == 1 and "no usable GPU" in r.stderr
    assert "[compile ] target cuda: the GPU pipeline + CUDA C (1 kernels" in r.stdout
