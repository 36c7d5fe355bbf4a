"""The pass infrastructure: registry, option parsing, pipeline text, PassManager, trace, CLI flags.

Uses passes registered here (``test-*``) so that it does not depend on any real transform.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

import affine_ir as air
import transforms
from affine_ir.dialects.affine import AffineForOp
from runtime.cli import affine_opt_main
from transforms import (
    Pass,
    PassManager,
    PipelineError,
    TransformError,
    get_pass,
    option,
    parse_pipeline,
    register_pass,
)
from transforms.testing import assert_refused_unchanged, run_pipeline

SRC = """\
func.func @f(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      %s = arith.addf %a, %a : f32
      affine.store %s, %A[%i, %j] : memref<8x8xf32>
    }
  }
  return
}
"""


@register_pass
@dataclass(frozen=True)
class RenameLoops(Pass):
    """Appends ``suffix`` to every loop IV's name; refuses loops deeper than ``max-depth``."""

    name = "test-rename-loops"
    summary = "Rename loop IVs (a test pass)"
    suffix: str = option("x", "appended to each IV name")
    max_depth: int = option(10, "loops deeper than this are refused")
    sizes: tuple[int, ...] = option((), "a list option")
    flag: bool = option(False, "a boolean option")
    ratio: float = option(0.5, "a float option")

    def run_on_function(self, func, ctx):
        for op in func.walk():
            if isinstance(op, AffineForOp):
                depth = sum(isinstance(a, AffineForOp) for a in op.ancestors())
                if depth >= self.max_depth:
                    ctx.refused(op, TransformError(self.name, f"loop %{op.induction_var.name_hint} is too deep",
                                                   loops=[op]))
                    continue
                op.induction_var.name_hint += self.suffix
                ctx.applied(op, f"renamed to %{op.induction_var.name_hint}")
        ctx.note(func, "done")


@register_pass
@dataclass(frozen=True)
class BreakIR(Pass):
    name = "test-break-ir"
    summary = "Erases the function's return (produces invalid IR)"

    def run_on_function(self, func, ctx):
        func.body.terminator.erase()


@register_pass
@dataclass(frozen=True)
class Refuse(Pass):
    name = "test-refuse"
    summary = "Raises TransformError after changing the IR"

    def run_on_function(self, func, ctx):
        for op in func.walk():
            if isinstance(op, AffineForOp):
                op.induction_var.name_hint = "changed"
        raise TransformError(self.name, "always refuses", location=func.location)


# -- registry and options ---------------------------------------------------------------------------
def test_registry_finds_passes_by_mlir_name():
    assert get_pass("test-rename-loops") is RenameLoops
    assert get_pass("no-such-pass") is None
    assert "test-rename-loops" in transforms.all_passes()


def test_options_are_dataclass_fields_with_mlir_names():
    opts = {o.name: o for o in RenameLoops.options()}
    assert list(opts) == ["suffix", "max-depth", "sizes", "flag", "ratio"]
    assert opts["max-depth"].type_name == "integer" and opts["max-depth"].default == 10
    assert opts["sizes"].type_name == "list of integer" and opts["flag"].type_name == "boolean"
    p = RenameLoops.from_options({"max-depth": "2", "sizes": "32,16", "flag": "true", "ratio": "0.25"})
    assert (p.max_depth, p.sizes, p.flag, p.ratio) == (2, (32, 16), True, 0.25)
    assert str(p) == "test-rename-loops{max-depth=2 sizes=32,16 flag=true ratio=0.25}"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.max_depth = 3


@pytest.mark.parametrize("text, message", [
    ("test-rename-loops{max-depth=abc}", "option 'max-depth' expects integer, got 'abc'"),
    ("test-rename-loops{sizes=1,x}", "option 'sizes' expects integer, got 'x'"),
    ("test-rename-loops{flag=maybe}", "option 'flag' expects boolean, got 'maybe'"),
    ("test-rename-loops{nope=1}", "pass 'test-rename-loops' has no option 'nope' (options: suffix, max-depth"),
    ("test-rename-loop", "unknown pass 'test-rename-loop' (did you mean 'test-rename-loops'"),
    ("test-rename-loops{max-depth=1", "expected '}' to close the options"),
    ("builtin.module(func.func(test-rename-loops)", "expected ')' to close the nested pipeline"),
    ("foo.bar(test-rename-loops)", "'foo.bar' is not an op anchor"),
    ("test-rename-loops test-refuse", "unexpected 't'"),
    ("test-rename-loops,", "expected a pass name, found 'end of text'"),
    ('test-rename-loops{suffix="ab}', "unterminated string"),
])
def test_bad_pipelines_are_refused_with_the_place(text, message):
    with pytest.raises(PipelineError) as e:
        PassManager.parse(text)
    assert message in str(e.value)
    assert e.value.column is not None and "^" in str(e.value)


def test_both_pipeline_forms_and_anchors():
    short = parse_pipeline("test-rename-loops{suffix=_a max-depth=1},test-rename-loops")
    nested = parse_pipeline("builtin.module(func.func(test-rename-loops{suffix=_a max-depth=1}, test-rename-loops))")
    assert [str(e.pass_) for e in short] == [str(e.pass_) for e in nested]
    assert nested[0].anchors == ("builtin.module", "func.func") and short[0].anchors == ()
    mixed = parse_pipeline("test-rename-loops,func.func(test-rename-loops{flag})")
    assert mixed[1].pass_.flag is True and mixed[1].anchors == ("func.func",)
    assert parse_pipeline("") == [] and parse_pipeline("builtin.module(func.func())") == []
    quoted = parse_pipeline('test-rename-loops{suffix="a b" sizes={4,8}}')
    assert quoted[0].pass_.suffix == "a b" and quoted[0].pass_.sizes == (4, 8)
    pm = PassManager.parse("test-rename-loops{suffix=_a},test-rename-loops")
    assert str(pm) == "builtin.module(func.func(test-rename-loops{suffix=_a},test-rename-loops))"
    assert str(PassManager.parse(str(pm))) == str(pm)  # the printed pipeline parses back


# -- running and tracing ----------------------------------------------------------------------------
def test_run_returns_a_new_module_and_leaves_the_input():
    m = air.parse(SRC)
    before = str(m)
    pm = PassManager.parse("test-rename-loops{suffix=_a},test-rename-loops{suffix=_b max-depth=1}")
    out = pm.run(m)
    assert str(m) == before
    assert "%i_a_b" in str(out) and "%j_a " in str(out) and "%j_a_b" not in str(out)
    t1, t2 = pm.trace
    assert t1.before == before and t1.after == t2.before == str(out).replace("_b", "") and t2.after == str(out)
    assert t1.changed and t2.changed and t1.seconds >= 0
    assert [d.kind for d in t1.decisions] == ["applied", "applied", "note"]
    assert [d.kind for d in t2.decisions] == ["applied", "refused", "note"]
    refusal = t2.refusals[0]
    assert refusal.message == "loop %j_a is too deep" and refusal.location.line == 3
    assert str(refusal).startswith("<string>:3:5: test-rename-loops: refused: loop %j_a is too deep")
    assert "-  affine.for %i_a = 0 to 8 {" in t2.diff() or "-    affine.for %i_a = 0 to 8 {" in t2.diff()
    assert "+    affine.for %i_a_b = 0 to 8 {" in t2.diff()
    assert pm.trace.decisions == t1.decisions + t2.decisions
    html = pm.trace._repr_html_()
    assert html.count("<details>") == 2 and "too deep" in html
    assert "Total Execution Time" in pm.trace.timing_report()


def test_unchanged_pass_is_traced_as_unchanged():
    m = air.parse(SRC)
    pm = PassManager.parse("test-rename-loops{suffix=}")
    pm.run(m)
    assert not pm.trace[0].changed and pm.trace[0].diff() == ""


def test_invalid_output_is_reported_as_a_bug_of_the_pass():
    m = air.parse(SRC)
    with pytest.raises(TransformError) as e:
        PassManager.parse("test-break-ir").run(m)
    assert e.value.pass_name == "test-break-ir" and "does not verify (a bug in the pass)" in str(e.value)
    out = PassManager.parse("test-break-ir", verify_each=False).run(m)  # verification off: no error
    assert "return" not in str(out)


def test_a_refusing_pass_leaves_the_input_untouched():
    m = air.parse(SRC)
    assert_refused_unchanged(lambda: run_pipeline("test-refuse", m), m)
    assert_refused_unchanged(lambda: run_pipeline(Refuse(), m), m)


def test_capture_ir_off_keeps_decisions():
    pm = PassManager.parse("test-rename-loops", capture_ir=False)
    pm.run(air.parse(SRC))
    assert pm.trace[0].before == "" and pm.trace[0].changed and len(pm.trace[0].decisions) == 3


# -- the command line ---------------------------------------------------------------------------------
@pytest.fixture
def src_file(tmp_path):
    p = tmp_path / "in.mlir"
    p.write_text(SRC)
    return str(p)


def _run(capsys, argv):
    code = affine_opt_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("flags", [
    ["-test-rename-loops=suffix=_a", "--test-rename-loops=\"suffix=_b max-depth=1\""],
    ["--test-rename-loops={suffix=_a}", "-test-rename-loops='suffix=_b max-depth=1'"],
    ["--pass-pipeline=builtin.module(func.func(test-rename-loops{suffix=_a},"
     "test-rename-loops{suffix=_b max-depth=1}))"],
    ["-pass-pipeline", "test-rename-loops{suffix=_a},test-rename-loops{suffix=_b max-depth=1}"],
])
def test_cli_runs_passes_in_order(capsys, src_file, flags):
    code, out, err = _run(capsys, [src_file, *flags])
    assert code == 0, err
    assert "affine.for %i_a_b = 0 to 8" in out and "affine.for %j_a = 0 to 8" in out
    assert err == ""


def test_cli_refuses_flags_and_pipeline_together(capsys, src_file):
    code, _, err = _run(capsys, [src_file, "-test-rename-loops", "--pass-pipeline=test-rename-loops"])
    assert code == 2 and "either as flags or with --pass-pipeline" in err


def test_cli_bad_pipeline_is_a_usage_error(capsys, src_file):
    code, _, err = _run(capsys, [src_file, "--pass-pipeline=test-rename-loops{max-depth=x}"])
    assert code == 2 and "option 'max-depth' expects integer, got 'x'" in err


def test_cli_print_ir_after_all_and_change(capsys, src_file):
    code, out, err = _run(capsys, [src_file, "-test-rename-loops=suffix=", "-test-rename-loops=suffix=_z",
                                   "--print-ir-after-all"])
    assert code == 0 and err.count("// -----// IR Dump After RenameLoops (test-rename-loops) //----- //") == 2
    code, out, err = _run(capsys, [src_file, "-test-rename-loops=suffix=", "-test-rename-loops=suffix=_z",
                                   "--mlir-print-ir-after-change"])
    assert code == 0 and err.count("IR Dump After") == 1 and "%i_z" in err


def test_cli_timing_and_explain(capsys, src_file):
    code, out, err = _run(capsys, [src_file, "-test-rename-loops=max-depth=1", "--mlir-timing", "--explain"])
    assert code == 0
    assert "Pass execution timing report" in err and "test-rename-loops{max-depth=1}" in err
    assert f"{src_file}:3:5: remark: test-rename-loops: refused: loop %j is too deep" in err
    assert f"{src_file}:2:3: remark: test-rename-loops: applied: renamed to %ix" in err


def test_cli_pass_failure_is_an_error_with_location(capsys, src_file):
    code, out, err = _run(capsys, [src_file, "-test-refuse"])
    assert code == 1 and f"{src_file}:1:1: error: test-refuse: always refuses" in err and out == ""


def test_cli_split_input_file_runs_the_pipeline_per_chunk(capsys, tmp_path):
    p = tmp_path / "two.mlir"
    p.write_text(SRC + "// -----\n" + SRC.replace("@f", "@g"))
    code, out, err = _run(capsys, [str(p), "-split-input-file", "-test-rename-loops=suffix=_q", "--explain"])
    assert code == 0 and out.count("affine.for %i_q") == 2 and out.count("// -----") == 1
    assert f"{p}:2:3: remark" in err and f"{p}:13:3: remark" in err  # line numbers of the whole file


def test_cli_help_lists_passes_and_options(capsys):
    code, out, _ = _run(capsys, ["--help"])
    assert code == 0
    assert "-test-rename-loops" in out and "Rename loop IVs (a test pass)" in out
    assert "max-depth=<integer> (default: 10)" in out and "loops deeper than this are refused" in out


def test_passes_live_in_stage_folders_and_old_paths_still_import():
    """Every registered pass is defined in a stage folder; the old flat module paths give the
    same module objects (with a DeprecationWarning), and stage names are package attributes."""
    import importlib
    import warnings

    from transforms.pass_base import PASS_MODULES

    for name, module in PASS_MODULES.items():
        assert module.split(".")[0] in transforms.STAGES, name
        assert type(transforms.get_pass(name)()).__module__ == f"transforms.{module}"
    import sys

    sys.modules.pop("transforms.tile", None)
    with pytest.warns(DeprecationWarning, match="transforms.tile moved to transforms.loops.tile"):
        old = importlib.import_module("transforms.tile")
    assert old is importlib.import_module("transforms.loops.tile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from transforms.fuse import fuse_loops  # noqa: F401  (an old path, as user scripts write it)
    assert transforms.tile_band is importlib.import_module("transforms.loops.tile").tile_band
    with pytest.raises(AttributeError):
        transforms.no_such_name  # noqa: B018
