"""The rewrite-pattern driver (affine_ir.rewrite, affine_ir.rewrite_driver): worklist, folding, bounds."""

from __future__ import annotations

import affine_ir as air
from affine_ir import Operation
from affine_ir.attributes import IntegerAttr
from affine_ir.dialects.arith import ConstantOp
from affine_ir.errors import Location
from affine_ir.rewrite import PatternRewriter, RewritePattern, register_patterns
from affine_ir.rewrite_driver import GreedyRewriteConfig, apply_patterns_greedily, is_pure_and_unused
from affine_ir.types import i32, index
from transforms import PassManager
from transforms.cleanup import canonicalize


class TagOp(Operation):
    """``test.tag %x {level = k}``: a pure user-defined op returning its operand."""

    name = "test.tag"
    is_pure = True

    def __init__(self, value, level: int = 0, location=None):
        super().__init__([value], [value.type], {"level": IntegerAttr(level, i32)}, location=location)

    @property
    def level(self) -> int:
        return self.attributes["level"].value


class FoldingTagOp(TagOp):
    """``test.folding_tag``: folds to the constant 7 (a folder declared on the op class)."""

    name = "test.folding_tag"

    def fold(self):
        return [IntegerAttr(7, self.results[0].type)]


class PeelTag(RewritePattern):
    """``test.tag(test.tag(x))`` -> ``test.tag(x)`` with the outer level, a new op (no location given)."""

    root = TagOp

    def __init__(self):
        self.calls = 0

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> bool:
        self.calls += 1
        inner = op.operands[0].owner
        if not isinstance(inner, TagOp):
            return False
        new = TagOp(inner.operands[0], op.level)
        new.results[0].name_hint = "peeled"
        rewriter.replace_op_with_new(op, new)
        return True


class RaiseLevel(RewritePattern):
    """Bumps ``level`` up to ``limit`` in place (``limit`` None: forever, never converging)."""

    root = TagOp

    def __init__(self, limit: int | None, benefit: int = 1):
        self.limit = limit
        self.benefit = benefit

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> bool:
        if self.limit is not None and op.level >= self.limit:
            return False
        with rewriter.modify_op_in_place(op):
            op.attributes["level"] = IntegerAttr(op.level + 1, i32)
        return True


def _func(text: str):
    m = air.parse(text)
    return m, next(op for op in m.walk() if isinstance(op, air.FuncOp))


IDENTITY = """
func.func @f(%x: index) -> index {
  return %x : index
}"""


def _tags(func, *levels: int, cls=TagOp) -> list[TagOp]:
    """A chain of tags before the return, the return using the last."""
    ret = func.body.ops[-1]
    v = ret.operands[0]
    made = []
    for k, level in enumerate(levels):
        t = cls(v, level, location=Location("t.mlir", 10 + k, 3))
        func.body.insert_before(ret, t)
        made.append(t)
        v = t.results[0]
    ret.set_operands([v])
    return made


def test_dead_ops_go_and_their_operands_are_revisited_in_the_same_iteration():
    m, f = _func("""
func.func @f(%n: index) -> index {
  %a = arith.addi %n, %n : index
  %b = arith.muli %a, %a : index
  %c = arith.muli %b, %b : index
  return %n : index
}""")
    result = apply_patterns_greedily(f, [])
    assert str(m).count("arith.") == 0
    # %c dies first (the seed is in program order, so %a and %b were looked at alive): erasing it
    # revisits %b, then %a, within the first iteration; the second only confirms the fixpoint.
    assert result.converged and result.changed
    assert result.iterations == 2
    assert result.counts["erased"] == 3


class SkipInnerTag(RewritePattern):
    """``test.tag(test.tag(x))`` -> ``test.tag(x)`` in place: the outer op's operand set to ``x``."""

    root = TagOp

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> bool:
        inner = op.operands[0].owner
        if not isinstance(inner, TagOp):
            return False
        with rewriter.modify_op_in_place(op):
            op.set_operands([inner.operands[0]])
        return True


def test_an_operand_dropped_in_place_leaves_its_dead_definer_to_the_same_iteration():
    m, f = _func(IDENTITY)
    _tags(f, 0, 1)
    result = apply_patterns_greedily(f, [SkipInnerTag()])
    assert str(m).count("test.tag") == 1
    # the inner tag, looked at alive before the outer one dropped it, is queued again when the outer
    # one is rewritten (no erasure reports it): erased in the first iteration, the second confirms
    assert result.converged and result.iterations == 2
    assert result.counts["erased"] == 1


def test_folder_runs_before_patterns_and_constants_are_materialized():
    m, f = _func(IDENTITY)
    (tag,) = _tags(f, 0, cls=FoldingTagOp)
    peel, raise_level = PeelTag(), RaiseLevel(limit=5)
    result = apply_patterns_greedily(f, [peel, raise_level])
    text = str(m)
    assert "test.folding_tag" not in text
    assert "arith.constant 7 : index" in text
    assert peel.calls == 0 and tag.parent is None  # no pattern saw the op: its folder won
    assert result.counts["folded_to_constant"] == 1
    const = f.body.ops[0]
    assert isinstance(const, ConstantOp) and const.location == Location("t.mlir", 10, 3)
    assert f.body.ops[-1].operands[0] is const.results[0]


def test_replacing_op_keeps_uses_and_gives_new_ops_the_replaced_location():
    m, f = _func(IDENTITY)
    inner, outer = _tags(f, 1, 4)
    arg = f.body.args[0]
    apply_patterns_greedily(f, [PeelTag()])
    ret = f.body.ops[-1]
    (new,) = [op for op in f.body.ops if isinstance(op, TagOp)]  # the inner tag died, unused
    assert new is not outer and new is not inner
    assert new.level == 4 and new.operands[0] is arg
    assert new.location == outer.location  # no location given: the replaced op's
    assert ret.operands[0] is new.results[0]
    assert [u.op for u in new.results[0].uses] == [ret]
    assert not outer.results[0].uses and outer.parent is None
    assert [u.op for u in arg.uses] == [new]  # the erased ops dropped their uses
    air.verify(m)


def test_highest_benefit_first_and_modified_ops_are_revisited():
    m, f = _func(IDENTITY)
    (tag,) = _tags(f, 0)

    class ToTen(RewritePattern):
        root = TagOp
        benefit = 2

        def match_and_rewrite(self, op, rewriter):
            if op.level >= 10:
                return False
            with rewriter.modify_op_in_place(op):
                op.attributes["level"] = IntegerAttr(10, i32)
            return True

    result = apply_patterns_greedily(f, [RaiseLevel(limit=12), ToTen()])
    # ToTen applies first (10), then RaiseLevel twice (11, 12) on the revisits of the modified op.
    assert tag.level == 12
    assert result.converged and result.iterations == 2
    assert result.counts["ToTen"] == 1 and result.counts["RaiseLevel"] == 2


class SilentRaise(RewritePattern):
    """Bumps ``level`` without telling the rewriter: nothing is revisited, so each iteration of the
    driver makes exactly one change (the seed visits the op once) and it never converges."""

    root = TagOp

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> bool:
        op.attributes["level"] = IntegerAttr(op.level + 1, i32)
        return True


def test_bounds_are_reported():
    m, f = _func(IDENTITY)
    (tag,) = _tags(f, 0)
    result = apply_patterns_greedily(f, [SilentRaise()], GreedyRewriteConfig(max_iterations=3))
    assert (result.converged, result.changed, result.iterations, result.rewrites) == (False, True, 3, 3)
    assert tag.level == 3
    result = apply_patterns_greedily(f, [RaiseLevel(limit=None)], GreedyRewriteConfig(max_rewrites=50))
    assert not result.converged and result.rewrites == 50 and result.iterations == 1
    assert tag.level == 53
    result = apply_patterns_greedily(f, [RaiseLevel(limit=55)])
    assert result.converged and result.rewrites == 2 and result.iterations == 2


def test_user_defined_pattern_on_user_defined_op_runs_in_canonicalize():
    class CancelDoubleTag(RewritePattern):
        root = TagOp

        def match_and_rewrite(self, op, rewriter):
            inner = op.operands[0].owner
            if not (isinstance(inner, TagOp) and inner.level == op.level == 3):
                return False
            rewriter.replace_op(op, inner.operands[0])
            return True

    class DoubleTagOp(TagOp):
        name = "test.double_tag"

    register_patterns(DoubleTagOp, CancelDoubleTag())
    m, f = _func(IDENTITY)
    _tags(f, 3, 3, cls=DoubleTagOp)
    assert canonicalize(m)
    assert "test.double_tag" not in str(m)
    assert f.body.ops[-1].operands[0] is f.body.args[0]


def test_canonicalize_records_when_the_bound_is_hit():
    text = """
func.func @f(%A: memref<4xindex>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = arith.addi %c1, %c2 : index
  %b = arith.addi %a, %c2 : index
  affine.store %b, %A[0] : memref<4xindex>
  return
}"""
    pm = PassManager.parse("canonicalize{max-iterations=1 test-convergence=true}")
    out = pm.run(air.parse(text))
    refusals = [d for d in pm.trace.decisions if d.kind == "refused"]
    assert "arith.constant 5 : index" in str(out)
    assert len(refusals) == 1 and "did not converge in 1 iterations" in refusals[0].message
    pm = PassManager.parse("canonicalize{test-convergence=true}")
    pm.run(air.parse(text))
    assert not [d for d in pm.trace.decisions if d.kind == "refused"]


def test_rewriter_without_driver_inserts_at_its_insertion_point():
    m, f = _func(IDENTITY)
    ret = f.body.ops[-1]
    rw = PatternRewriter()
    rw.start(ret)
    c = rw.insert(ConstantOp(IntegerAttr(3, index)))
    assert f.body.ops[0] is c and c.location == ret.location
    rw.set_insertion_point_after(c)
    d = rw.insert(ConstantOp(IntegerAttr(4, index), location=Location("x.mlir", 1, 1)))
    assert f.body.ops[1] is d and d.location == Location("x.mlir", 1, 1)


def test_driver_stays_inside_its_root():
    m, f = _func("""
func.func @f(%A: memref<8xindex>, %n: index) {
  %dead = arith.addi %n, %n : index
  affine.for %i = 0 to 8 {
    %x = arith.muli %i, %i : index
    %y = arith.addi %x, %i : index
  }
  return
}""")
    loop = f.body.ops[1]
    result = apply_patterns_greedily(loop, [])
    assert result.counts["erased"] == 2 and len(loop.body.ops) == 1  # only the yield is left
    assert "%dead = arith.addi" in str(m)  # outside the root: not looked at
    pure_only = GreedyRewriteConfig(is_trivially_dead=is_pure_and_unused)
    assert apply_patterns_greedily(loop, [], pure_only, include_root=True).rewrites == 0  # a loop is not pure
    result = apply_patterns_greedily(loop, [], include_root=True)  # the default test knows effect-free loops
    assert result.converged and result.rewrites == 1 and loop.parent is None
    assert "%dead" in str(m)
