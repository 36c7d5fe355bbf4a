"""The fuzzing driver (``python -m affine_ir.testing.fuzz``): every mode runs cases and reports
counts; an injected wrong pass, a hanging pass and a crashing pass are found, classified,
minimized and written as reproducers that replay."""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap

import numpy as np
import pytest

import affine_ir as air
from affine_ir.testing import aliased_pairs, copy_arguments, programs_with_inputs, run
from affine_ir.testing.fuzz import COLUMNS, FuzzConfig, fuzz, main
from affine_ir.testing.fuzz_cases import MODES, Case, Outcome, build_case, run_case
from affine_ir.testing.fuzz_reduce import ir_candidates, minimize

#: A plugin the workers import: passes that are wrong (store value + 1), hang, or abort.
PLUGIN = textwrap.dedent('''
    from __future__ import annotations

    import os
    import time
    from dataclasses import dataclass

    from affine_ir.builder import Builder
    from affine_ir.dialects.affine import AffineForOp, AffineStoreOp
    from affine_ir.types import FloatType
    from transforms import Pass, register_pass


    @register_pass
    @dataclass(frozen=True)
    class BumpStores(Pass):
        """Wrong on purpose: every store stores its value plus one."""
        name = "test-fuzz-bump-stores"

        def run_on_function(self, func, ctx):
            for store in [op for op in func.walk() if isinstance(op, AffineStoreOp)]:
                value = store.operands[0]
                b = Builder(func)
                with b.before(store):
                    one = b.constant(1, value.type)
                    bumped = b.addf(value, one) if isinstance(value.type, FloatType) else b.addi(value, one)
                store.set_operand(0, bumped)


    @register_pass
    @dataclass(frozen=True)
    class BreakDominance(Pass):
        """Wrong on purpose: the last store moves to the top of its block, before its value."""
        name = "test-fuzz-invalid"

        def run_on_function(self, func, ctx):
            stores = [op for op in func.walk() if isinstance(op, AffineStoreOp)]
            if stores:
                block = stores[-1].parent
                block.insert(0, stores[-1].detach())


    @register_pass
    @dataclass(frozen=True)
    class HangOnLoops(Pass):
        name = "test-fuzz-hang"

        def run_on_function(self, func, ctx):
            if any(isinstance(op, AffineForOp) for op in func.walk()):
                time.sleep(600)


    @register_pass
    @dataclass(frozen=True)
    class AbortOnLoops(Pass):
        name = "test-fuzz-abort"

        def run_on_function(self, func, ctx):
            if any(isinstance(op, AffineForOp) for op in func.walk()):
                os.abort()
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The plugin module's name, importable here and in the workers (through PYTHONPATH)."""
    (tmp_path / "fuzz_test_plugin.py").write_text(PLUGIN)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path / "cache"))
    yield "fuzz_test_plugin"
    sys.modules.pop("fuzz_test_plugin", None)


def test_every_mode_runs_cases_and_reports_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path / "cache"))
    lines: list[str] = []
    counts, findings = fuzz(FuzzConfig(minutes=5, seed=7, out=tmp_path / "out", max_cases=8, report_every=0),
                            log=lines.append)
    assert set(counts) == set(MODES)
    for mode, c in counts.items():
        assert c["programs"] >= 1 and c["cases"] >= 1, (mode, c)
        assert sum(c[k] for k in COLUMNS[2:]) == c["cases"], (mode, c)
    assert lines[0].startswith("fuzz: seed 7, modes passes,cpu,gpu-emu,fusion")
    table = [line for line in lines if line.startswith("after")][-1].splitlines()  # the final counts
    assert table[0].split()[3:] == ["mode", *COLUMNS]
    rows = {row.split()[0]: [int(x) for x in row.split()[1:]] for row in table[1:]}
    assert rows == {mode: [counts[mode][k] for k in COLUMNS] for mode in MODES}
    assert lines[-1].startswith(f"findings: {len(findings)} signature(s)")


def test_an_injected_wrong_pass_is_found_minimized_and_replayed(tmp_path, plugin, capsys):
    out = tmp_path / "out"
    status = main(["--minutes", "5", "--seed", "3", "--modes", "passes", "--max-cases", "3", "--out", str(out),
                   "--plugin", plugin, "--pass-pool", "canonicalize,test-fuzz-bump-stores", "--report-every", "0",
                   "--minimize-seconds", "60"])
    printed = capsys.readouterr().out
    assert status == 1, printed  # a new finding
    assert "finding: passes mismatch" in printed and "known: NEW" in printed
    (folder,) = [p for p in out.iterdir() if p.name.endswith("passes-mismatch")]
    case = Case.from_json(json.loads((folder / "case.json").read_text()))
    assert case.pipeline == ("test-fuzz-bump-stores",)  # canonicalize and the others dropped
    original = Case.from_json(json.loads((folder / "original-case.json").read_text()))
    stores = [op for op in air.parse((folder / "program.mlir").read_text()).walk() if op.name == "affine.store"]
    before = [op for op in build_case(original)[0].walk() if op.name == "affine.store"]
    assert len(stores) == 1 < len(before) or len(before) == 1, (folder / "program.mlir").read_text()
    readme = (folder / "README.txt").read_text()
    assert "kind: mismatch" in readme and "replay: python -m affine_ir.testing.fuzz --replay" in readme
    assert main(["--replay", str(folder / "case.json"), "--plugin", plugin]) == 1
    assert capsys.readouterr().out.startswith("mismatch")


def test_hangs_and_crashes_are_findings(tmp_path, plugin):
    lines: list[str] = []
    counts, findings = fuzz(FuzzConfig(minutes=5, seed=5, modes=("passes",), out=tmp_path / "out", max_cases=4,
                                       case_timeout=3, plugins=(plugin,), pass_pool=("test-fuzz-hang",
                                                                                    "test-fuzz-abort"),
                                       minimize_seconds=8, report_every=0), log=lines.append)
    kinds = {f.outcome.kind: f for f in findings}
    assert {"hang", "crash"} <= set(kinds), lines
    assert counts["passes"]["hang"] + counts["passes"]["crash"] >= 2
    assert "SIGABRT" in kinds["crash"].outcome.error
    assert kinds["hang"].minimized.pipeline[-1].startswith("test-fuzz-hang")
    for f in kinds.values():
        assert (f.path / "case.json").exists() and (f.path / "program.mlir").exists()


# ----- the pieces -------------------------------------------------------------------------------------------
def test_a_clean_refusal_is_no_finding_and_an_invalid_pass_output_is(plugin):
    importlib.import_module(plugin)
    data = bytes([0, 0, 0, 0, 5]) + bytes(1100)  # one nest storing a load's value
    assert run_case(Case("passes", "programs", data, ("canonicalize",))).kind == "ok"
    refused = run_case(Case("passes", "programs", data, ("no-such-pass",)))  # PipelineError: a clean error
    assert refused.kind == "refused" and refused.error == "PipelineError"
    broken = run_case(Case("passes", "programs", data, ("test-fuzz-invalid",)))
    assert broken.kind == "internal" and broken.stage == "pipeline" and "does not verify" in broken.message


def test_minimize_keeps_the_signature_and_drops_what_does_not_matter():
    """A fake check that fails while the pipeline holds ``cse`` and the program a store of a
    constant: the minimizer keeps exactly those."""
    case = Case("passes", "programs", bytes(range(256)) * 5, ("canonicalize", "cse", "dce"))

    def check(c: Case) -> Outcome:
        text = str(build_case(c)[0])
        failing = "cse" in c.pipeline and "affine.store" in text
        return Outcome("mismatch" if failing else "ok")

    assert check(case).kind == "mismatch"
    small, outcome = minimize(case, check(case), check, seconds=60)
    assert small.pipeline == ("cse",) and outcome.kind == "mismatch"
    ops = [op.name for op in build_case(small)[0].walk()]
    assert ops.count("affine.store") == 1 and "affine.for" not in ops, ops


def test_ir_candidates_erase_unused_ops_and_cut_loops():
    text = """
    func.func @kernel(%A: memref<8xf32>) {
      affine.for %i = 0 to 8 {
        %v = affine.load %A[%i] : memref<8xf32>
        affine.store %v, %A[%i] : memref<8xf32>
      }
      return
    }"""
    candidates = [t for _, t in ir_candidates(text)]
    assert any("affine.for" not in t for t in candidates)
    assert any("affine.for %i = 0 to 1" in t for t in candidates)
    assert any("affine.load" in t and "affine.store" not in t for t in candidates)
    for t in candidates:
        air.verify(air.parse(t))


def test_aliased_inputs_alias_and_run_keeps_them_aliased():
    """``programs_with_inputs(alias=True)`` passes one array for two arguments of one type, and
    ``run`` copies it once (so the program sees the aliasing)."""
    from hypothesis import HealthCheck, given, settings

    seen = []

    @settings(max_examples=40, database=None, suppress_health_check=list(HealthCheck))
    @given(programs_with_inputs(alias=True))
    def check(case):
        m, args = case
        for a, b in aliased_pairs(m):
            if args[a] is args[b]:
                seen.append(1)
                copies = copy_arguments(args)
                assert copies[a] is copies[b] and copies[a] is not args[a]
                assert np.array_equal(run(m, args)[a], run(m, args)[b])

    check()
    assert len(seen) >= 10


def test_ir_candidates_near_the_index_limit_still_parse():
    """Cutting ``9223372036854775800 to 9223372036854775807 step 2**62`` to one iteration would
    need an upper bound past 2**63 - 1: no such candidate (every candidate parses back)."""
    text = """
    func.func @kernel(%A: memref<3xf32>) {
      affine.for %i = 0 to 2 {
        affine.for %j = 9223372036854775800 to 9223372036854775807 step 4611686018427387904 {
          %c = arith.constant 1.0 : f32
          affine.store %c, %A[%j mod 3] : memref<3xf32>
        }
      }
      return
    }"""
    candidates = [t for _, t in ir_candidates(text)]
    assert any("affine.for %i = 0 to 1 " in t for t in candidates)
    for t in candidates:
        assert str(air.parse(t)) == t
    assert list(ir_candidates("func.func @kernel() {")) == []  # text that does not parse: nothing
