"""Loop vectorization with virtual vectors: ``affine-super-vectorize`` (MLIR's pass name).

:func:`vectorize_loop` turns a step-1 loop into a loop of step ``width`` whose body computes
``width`` consecutive iterations at once on ``vector<width x T>`` values (a *virtual* vector:
LLVM splits a ``vector<64xf32>`` into native registers). The loop need not be innermost: the
ops of the loops nested in it are vectorized too, so vectorizing ``%j`` of a matmul
``(i, j, k)`` gives a ``%k`` loop computing ``broadcast(A[i, k]) * B[k, j:j+w]`` into
``C[i, j:j+w]``::

    affine.for %j = 0 to 64 {                      affine.for %j = 0 to 64 step 8 {
      affine.for %k = 0 to 32 {                      affine.for %k = 0 to 32 {
        %a = affine.load %A[%i, %k]          ->        %a = affine.load %A[%i, %k]
        %b = affine.load %B[%k, %j]                    %a_vec = vector.broadcast %a : f32 to vector<8xf32>
        %p = arith.mulf %a, %b : f32                   %b = affine.vector_load %B[%k, %j] : ..., vector<8xf32>
        ...                                            %p = arith.mulf %a_vec, %b : vector<8xf32>

Guarantees (legality in :mod:`transforms.cpu.vectorize_plan`, checked before anything changes;
otherwise :class:`TransformError` naming the loop, the op or dependence and its location):

- the result computes what the loop computed: no memory dependence is carried by the loop,
  so running ``width`` iterations in lock-step keeps every dependence; uniform values stay
  scalar (``vector.broadcast`` where a vector op takes them: once per value, right after its
  definition, at the top of the block defining it, or before the loop for values defined
  outside it); varying ones become vectors, values and types keeping their names;
- a trip count that is not a multiple of ``width`` leaves a scalar remainder loop (the
  original body) after the main loop over ``[lb, lb + ((ub - lb) floordiv w) * w)``; with
  constant bounds they fold and an empty remainder is not emitted; a constant trip count
  below ``width`` leaves the loop as it is (the result's ``loop`` is None);
- reductions (``iter_args`` of the loop, only with ``reductions=True``, MLIR's
  ``vectorize-reductions``): the vector accumulator starts at the identity splat, and after
  the loop ``vector.reduction`` combines its lanes, then the original initial value. This
  reassociates: float sums and products may round differently from the scalar loop.

The pass vectorizes, in every outermost loop nest (an ``affine.for`` not inside another),
the deepest loops that are legal, have a constant trip count of at least the width (or a
symbolic one) and at least one contiguous access: loops are tried innermost first and a
loop enclosing one already vectorized is not tried. ``loop-depth=d`` instead vectorizes the
loops at depth ``d`` of each nest (0: the outermost). Every vectorized loop is recorded as
applied; a nest where none is gets a note with the reason of its deepest refused candidate.
Differences from MLIR's pass: one vector dimension (``virtual-vector-size`` is one integer),
loops chosen by legality and contiguity (MLIR's patterns and ``test-fastest-varying`` are
not modelled), remainder loops where MLIR masks, and exact (isl) dependences.
``nested-remainders=false`` (the GPU pipeline's) skips a loop nested in another one whose
remainder loop would make the enclosing nest imperfect (the GPU maps a perfect band of parallel
loops to blocks x threads; a remainder would leave only the outer loop mapped).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import Operation, Value
from affine_ir.dialects.affine import (
    AffineForOp,
    AffineIfOp,
    AffineVectorLoadOp,
    AffineVectorStoreOp,
    AffineYieldOp,
)
from affine_ir.dialects.arith import OPS as ARITH_OPS
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.vector import BroadcastOp, ReductionOp
from affine_ir.types import VectorType, vector
from analysis import reduction_identity

from ..errors import TransformError
from ..loop_utils import at_location, loop_name
from ..loops.unroll import split_cleanup_loop
from ..pass_base import Pass, PassContext, option, register_pass
from .vectorize_plan import VECTOR_REDUCTION_KINDS, VectorizePlan, plan_vectorization

__all__ = ["SuperVectorize", "VectorizeResult", "vectorize_check", "vectorize_loop"]

PASS = "affine-super-vectorize"


@dataclass(frozen=True)
class VectorizeResult:
    """``loop``: the vectorized main loop (None when its trip count is below the width, nothing
    changed); ``remainder``: the scalar loop running the last iterations (None when none is left)."""

    loop: AffineForOp | None
    remainder: AffineForOp | None


def vectorize_check(loop: AffineForOp, width: int, *, reductions: bool = False) -> str | None:
    """None when :func:`vectorize_loop` would vectorize ``loop`` by ``width``, else the reason it
    would refuse (the message of its :class:`TransformError`). The IR is not changed."""
    try:
        plan_vectorization(loop, width, reductions)
    except TransformError as e:
        return e.reason
    return None


def vectorize_loop(loop: AffineForOp, width: int, *, reductions: bool = False) -> VectorizeResult:
    """Vectorize ``loop`` by ``width`` lanes (see the module docstring for what changes and
    what is guaranteed). Raises :class:`TransformError` when it is illegal; the IR is then
    unchanged. Iteration ``j`` of the main loop (step ``width``) computes the original
    iterations ``j .. j + width - 1``; a remainder loop after it runs the rest.
    """
    return _apply(plan_vectorization(loop, width, reductions))


def _apply(plan: VectorizePlan) -> VectorizeResult:
    loop = plan.loop
    if plan.trip_count is not None and plan.trip_count < plan.width:
        return VectorizeResult(None, loop)
    remainder = split_cleanup_loop(loop, plan.cleanup) if plan.cleanup is not None else None
    _Rewriter(plan).run()
    return VectorizeResult(loop, remainder)


# -- the rewrite ------------------------------------------------------------------------------------------
class _Rewriter:
    """Applies a :class:`VectorizePlan` in place: retypes the varying values, replaces the
    accesses, broadcasts uniform operands of vector ops, and finishes the reductions."""

    def __init__(self, plan: VectorizePlan):
        self.plan = plan
        self.loop = plan.loop
        self.width = plan.width
        self.broadcasts: dict[Value, Value] = {}
        self.loads = set(plan.loads)
        self.stores = set(plan.stores)

    def vtype(self, t) -> VectorType:
        return vector((self.width,), t)

    def run(self) -> None:
        loop = self.loop
        loop.attributes["step"] = self.width
        inits = list(loop.inits)
        n = loop.lower_bound_map.num_inputs + loop.upper_bound_map.num_inputs
        for k, kind in self.plan.reductions:
            arg = loop.iter_args[k]
            ident = ConstantOp.of(reduction_identity(kind, arg.type), self.vtype(arg.type), location=loop.location)
            loop.parent.insert_before(loop, ident)
            loop.set_operand(n + k, ident.result)
            loop.results[k].type = self.vtype(arg.type)
        for v in self.plan.varying:
            v.type = self.vtype(v.type)
        for op in list(loop.body.walk()):
            self.rewrite(op)
        self.finish_reductions(inits)

    def rewrite(self, op: Operation) -> None:
        if op in self.loads:
            new = AffineVectorLoadOp(op.result.type, op.memref, op.map, op.indices, location=op.location)
            new.result.name_hint = op.result.name_hint
            new.attributes.update({k: v for k, v in op.attributes.items() if k != "map"})
            op.parent.insert_before(op, new)
            op.result.replace_all_uses_with(new.result)
            self.plan.add(new.result)
            op.erase()
        elif op in self.stores:
            new = AffineVectorStoreOp(self.vec(op.value, op), op.memref, op.map, op.indices, location=op.location)
            new.attributes.update({k: v for k, v in op.attributes.items() if k != "map"})
            op.parent.insert_before(op, new)
            op.erase()
        elif isinstance(op, AffineForOp):
            n = op.lower_bound_map.num_inputs + op.upper_bound_map.num_inputs
            for k, arg in enumerate(op.iter_args):
                if self.plan.is_varying(arg):
                    op.set_operand(n + k, self.vec(op.inits[k], op))
        elif isinstance(op, AffineYieldOp):
            for k, v in enumerate(op.operands):
                if self.yields_vector(op.parent_op, k):
                    op.set_operand(k, self.vec(v, op))
        elif not isinstance(op, AffineIfOp) and any(self.plan.is_varying(r) for r in op.results):
            for k, v in enumerate(op.operands):
                op.set_operand(k, self.vec(v, op))

    def yields_vector(self, parent: Operation, k: int) -> bool:
        if isinstance(parent, AffineForOp):
            return self.plan.is_varying(parent.iter_args[k])
        return self.plan.is_varying(parent.results[k])

    def vec(self, v: Value, user: Operation) -> Value:
        """``v`` as a vector: itself when varying, else its broadcast (made once)."""
        if self.plan.is_varying(v):
            return v
        if v not in self.broadcasts:
            hint = f"{v.name_hint}_vec" if v.name_hint else None
            b = BroadcastOp(v, self.vtype(v.type), location=user.location, name_hint=hint)
            self._place(b, v)
            self.broadcasts[v] = b.result
        return self.broadcasts[v]

    def _place(self, b: Operation, v: Value) -> None:
        owner = v.owner
        op = owner if isinstance(owner, Operation) else owner.parent_op
        if op is None or (op is not self.loop and not self.loop.is_ancestor_of(op)):
            self.loop.parent.insert_before(self.loop, b)
        elif isinstance(owner, Operation):
            owner.parent.insert_after(owner, b)
        else:
            owner.insert(0, b)

    def finish_reductions(self, inits: list[Value]) -> None:
        """After the loop: each vector accumulator reduced to a scalar and combined with the
        original initial value; the loop's users get that value."""
        loop = self.loop
        anchor: Operation = loop
        for k, kind in self.plan.reductions:
            res = loop.results[k]
            uses = list(res.uses)
            red = ReductionOp(VECTOR_REDUCTION_KINDS[kind], res, location=loop.location)
            comb = ARITH_OPS[kind](inits[k], red.result, location=loop.location, name_hint=res.name_hint)
            loop.parent.insert_after(anchor, red)
            loop.parent.insert_after(red, comb)
            anchor = comb
            for use in uses:
                use.op.set_operand(use.index, comb.result)


# -- the pass ------------------------------------------------------------------------------------------------
def _nests(func: Operation) -> list[AffineForOp]:
    """The outermost ``affine.for`` ops of ``func`` (not inside another ``affine.for``), in order."""
    out = []
    for op in func.walk():
        if isinstance(op, AffineForOp) and not any(isinstance(a, AffineForOp) for a in op.ancestors()):
            out.append(op)
    return out


def _depth(loop: AffineForOp) -> int:
    """How many ``affine.for`` ops enclose ``loop``."""
    return sum(isinstance(a, AffineForOp) for a in loop.ancestors())


@register_pass
@dataclass(frozen=True)
class SuperVectorize(Pass):
    """``affine-super-vectorize``: vectorize the deepest legal loop(s) of every loop nest by
    ``virtual-vector-size`` lanes (see the module docstring for the choice and the guarantees)."""

    name = "affine-super-vectorize"
    summary = "Vectorize affine loops with virtual vectors (one dimension)"
    virtual_vector_size: int = option(8, "lanes of the virtual vectors (the width; LLVM splits them into registers)")
    vectorize_reductions: bool = option(False, "vectorize loops carrying iter_args reductions (reassociates them)")
    loop_depth: int = option(-1, "vectorize the loops at this depth of each nest (-1: choose the deepest legal)")
    nested_remainders: bool = option(True, "vectorize a loop nested in another one also when it leaves a remainder "
                                           "loop (false: only trip counts known to be multiples of the width, so "
                                           "the nest stays perfect: the GPU pipeline maps the whole band)")

    def run_on_function(self, func, ctx: PassContext) -> None:
        for nest in _nests(func):
            if self.loop_depth >= 0:
                self._at_depth(nest, ctx)
            else:
                self._choose(nest, ctx)

    def _at_depth(self, nest: AffineForOp, ctx: PassContext) -> None:
        loops = [x for x in nest.walk() if isinstance(x, AffineForOp) and _depth(x) == self.loop_depth]
        for loop in loops:
            try:
                result = vectorize_loop(loop, self.virtual_vector_size, reductions=self.vectorize_reductions)
            except TransformError as e:
                ctx.refused(loop, e)
                continue
            self._record(loop, result, ctx)

    def _choose(self, nest: AffineForOp, ctx: PassContext) -> None:
        done: list[AffineForOp] = []
        deepest: tuple[int, AffineForOp, str] | None = None
        for loop in sorted([x for x in nest.walk() if isinstance(x, AffineForOp)], key=lambda x: -_depth(x)):
            if any(loop.is_ancestor_of(d) for d in done):
                continue
            plan, reason = self._candidate(loop)
            if plan is not None:
                self._record(loop, _apply(plan), ctx)
                done.append(loop)
            elif deepest is None:
                deepest = reason
        if not done and deepest is not None:
            ctx.note(nest, f"nest {loop_name(nest)} not vectorized; deepest candidate: {deepest}")

    def _candidate(self, loop: AffineForOp) -> tuple[VectorizePlan | None, str]:
        """The plan when the pass should vectorize ``loop``, else None and the reason."""
        w = self.virtual_vector_size
        try:
            plan = plan_vectorization(loop, w, self.vectorize_reductions)
        except TransformError as e:
            return None, e.reason
        name = f"{loop_name(loop)}{at_location(loop)}"
        if plan.trip_count is not None and plan.trip_count < w:
            return None, f"{name}: its trip count {plan.trip_count} is below the width {w}"
        if not plan.loads and not plan.stores:
            return None, f"{name}: no access in it is contiguous (nothing to load or store as a vector)"
        if plan.cleanup is not None and not self.nested_remainders and _depth(loop) > 0:
            return None, (f"{name}: it would leave a remainder loop inside {loop_name(loop.parent_op)} "
                          f"(nested-remainders=false: its trip count is not known to be a multiple of {w})")
        return plan, ""

    def _record(self, loop: AffineForOp, result: VectorizeResult, ctx: PassContext) -> None:
        w = self.virtual_vector_size
        if result.loop is None:
            ctx.note(loop, f"{loop_name(loop)} not vectorized: its trip count is below the width {w}")
            return
        ops = list(loop.walk())
        loads = sum(isinstance(o, AffineVectorLoadOp) for o in ops)
        stores = sum(isinstance(o, AffineVectorStoreOp) for o in ops)
        extra = f", {len(loop.iter_args)} reductions" if loop.iter_args else ""
        rest = " and a remainder loop" if result.remainder is not None else ""
        ctx.applied(loop, f"vectorized {loop_name(loop)} by {w} ({loads} vector loads, {stores} vector stores"
                          f"{extra}){rest}")
