"""Legality of vectorizing one loop (``affine-super-vectorize``): which values become vectors.

:func:`plan_vectorization` reads a loop and either returns a :class:`VectorizePlan` (what
:func:`transforms.cpu.vectorize.vectorize_loop` rewrites) or raises :class:`TransformError` with
the reason, naming the loop (``%j at file:line:col``), the op and its location. Nothing here
changes the IR.

Every value under the loop is *uniform* (the same in all iterations of a chunk of ``width``
consecutive iterations) or *varying* (it becomes a ``vector<width x T>``):

- the IV is neither: it (and ``affine.apply`` results computed from it) may only be used as
  access subscripts; any other use is refused (an index value that depends on the IV);
- a load is varying when the IV appears in its subscripts: only in the last one, with
  coefficient 1 (``affine.vector_load``); anything else would need a gather and is refused;
- a store must have the IV in its subscripts in the same way (``affine.vector_store``); a
  store whose address does not depend on the IV is refused;
- an element-wise op (``arith`` binary/unary ops, comparisons, ``select``, casts other than
  ``index_cast``, ``math``) is varying when one of its operands is; results of index type
  cannot vary; ``iter_args`` of inner loops and results of ``affine.if`` vary when what
  flows into them does (a fixpoint);
- ``iter_args`` of the loop itself vary; they are allowed only as reductions
  (``reductions=True``): the yielded value reaches the ``iter_arg`` through a chain of one
  combining op kind in :data:`VECTOR_REDUCTION_KINDS`;
- refused: inner loops whose bounds depend on the IV, ``affine.if`` whose condition does,
  calls, allocations, ``affine.parallel``, ops already on vectors, non-affine stores and
  varying non-affine loads, varying accesses to memrefs of ``i1``/``index``, and any op
  without element-wise semantics;
- no memory dependence may be carried by the loop (exact, :func:`analysis.dependences`);
- the trip count need not be a multiple of the width (a remainder loop takes the rest),
  except with ``max``/``min`` bounds, where it must provably be one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import analysis
from affine_ir import AffineExpr, Operation, Value
from affine_ir.dialects import arith, math
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp, AffineYieldOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.traits import EffectKind
from affine_ir.types import FloatType, IntegerType, VectorType

from ..errors import TransformError
from ..loop_utils import access_subscripts, at_location, loop_name, value_name
from ..loops.unroll import CleanupBoundError, CleanupBounds, cleanup_bounds

__all__ = ["VECTOR_REDUCTION_KINDS", "VectorizePlan", "plan_vectorization"]

PASS = "affine-super-vectorize"

#: Combining op (``arith`` name) of a vectorizable reduction -> its ``vector.reduction`` kind.
VECTOR_REDUCTION_KINDS = {
    "addf": "add", "mulf": "mul", "maximumf": "maximumf", "minimumf": "minimumf", "addi": "add", "muli": "mul",
    "andi": "and", "ori": "or", "xori": "xor", "maxsi": "maxsi", "minsi": "minsi",
}

#: Combining ops recognised in a reduction chain (those without a vector.reduction kind are refused).
_COMBINING = tuple(k.removeprefix("arith.") for k in analysis.loops.REDUCTION_OPS)

_VECTOR_OPS = tuple(arith.OPS[n] for n in (*arith.FLOAT_BINARY, *arith.INT_BINARY, "negf")) + \
    tuple(math.OPS.values()) + (arith.CmpFOp, arith.CmpIOp, arith.SelectOp) + \
    tuple(arith.OPS[n] for n in arith.CASTS if n != "index_cast")


def _may_stay_scalar(op: Operation) -> bool:
    """An op whose operands do not vary may stay scalar (run once per vector iteration) when its
    only effects read memory: pure ops (constants, ``index_cast``, ``affine.min/max``,
    ``memref.dim``) and loads (``memref.load``); calls, allocations and stores may not."""
    effects = op.memory_effects()
    return effects is not None and all(e.kind is EffectKind.READ for e in effects)


@dataclass
class VectorizePlan:
    """What vectorizing ``loop`` by ``width`` rewrites: the ``varying`` values (in program order),
    the ``loads``/``stores`` that become vector accesses, the ``reductions`` (index of the
    iter_arg, combining op name), the remainder split (``cleanup``, None when the trip count
    is a multiple of the width) and the constant ``trip_count`` (None when symbolic)."""

    loop: AffineForOp
    width: int
    varying: list[Value] = field(default_factory=list)
    loads: list[AffineLoadOp] = field(default_factory=list)
    stores: list[AffineStoreOp] = field(default_factory=list)
    reductions: list[tuple[int, str]] = field(default_factory=list)
    cleanup: CleanupBounds | None = None
    trip_count: int | None = None

    def is_varying(self, v: Value) -> bool:
        return v in self._varying_set

    def __post_init__(self) -> None:
        self._varying_set: set[Value] = set(self.varying)

    def add(self, v: Value) -> None:
        if v not in self._varying_set:
            self._varying_set.add(v)
            self.varying.append(v)


def _refuse(loop: AffineForOp, width: int, reason: str, dep=None) -> TransformError:
    return TransformError(PASS, f"cannot vectorize {loop_name(loop)}{at_location(loop)} by {width}: {reason}",
                          loops=[loop], dependence=dep)


def _what(op: Operation) -> str:
    return f"'{op.name}'{at_location(op)}"


def plan_vectorization(loop: AffineForOp, width: int, reductions: bool = False) -> VectorizePlan:
    """The plan for vectorizing ``loop`` by ``width`` (see the module docstring), or
    :class:`TransformError` with the reason; the IR is not changed."""
    if not isinstance(loop, AffineForOp):
        raise TransformError(PASS, f"cannot vectorize '{loop.name}': not an affine.for", loops=[loop])
    if not isinstance(width, int) or isinstance(width, bool) or width < 2:
        raise _refuse(loop, width, "the width must be an integer of at least 2")
    if loop.step != 1:
        raise _refuse(loop, width, f"its step is {loop.step} (only loops of step 1 are vectorized)")
    plan = VectorizePlan(loop, width, trip_count=analysis.constant_trip_count(loop))
    try:
        plan.cleanup = cleanup_bounds(loop, width)
    except CleanupBoundError as e:
        raise _refuse(loop, width, str(e).replace("cleanup loop", "remainder loop")) from None
    plan.reductions = _loop_reductions(loop, width, reductions)
    _Classifier(plan).run()
    _check_dependences(loop, width)
    return plan


# -- the loop's own iter_args ---------------------------------------------------------------------------
def _loop_reductions(loop: AffineForOp, width: int, allowed: bool) -> list[tuple[int, str]]:
    out = []
    for k, arg in enumerate(loop.iter_args):
        if not allowed:
            raise _refuse(loop, width, f"reduction over {loop_name(loop)} needs vectorize-reductions (iter_arg "
                                       f"{value_name(arg)})")
        red = analysis.iter_arg_reduction(loop, k)
        if red is None:
            raise _refuse(loop, width, f"iter_arg {value_name(arg)} is not a reduction (the value it yields must be "
                                       f"it combined with others by one op kind: {', '.join(_COMBINING)})")
        if not isinstance(arg.type, (FloatType, IntegerType)) or arg.type.width == 1:
            raise _refuse(loop, width, f"iter_arg {value_name(arg)} of type {arg.type} cannot become a vector")
        kind = red.kind
        if kind not in VECTOR_REDUCTION_KINDS:
            raise _refuse(loop, width, f"iter_arg {value_name(arg)} is a {kind} reduction, which vector.reduction "
                                       f"cannot express here (kinds: {', '.join(VECTOR_REDUCTION_KINDS)})")
        out.append((k, kind))
    return out


# -- uniform / varying ---------------------------------------------------------------------------------
class _Classifier:
    """Marks the varying values of ``plan.loop`` (a fixpoint over inner ``iter_args``) and
    finds the vector accesses; raises TransformError on what cannot be vectorized."""

    def __init__(self, plan: VectorizePlan):
        self.plan = plan
        self.loop = plan.loop
        self.iv = plan.loop.induction_var
        self.forced: list[Value] = [plan.loop.iter_args[k] for k, _ in plan.reductions]
        self.changed = False

    def refuse(self, reason: str) -> TransformError:
        return _refuse(self.loop, self.plan.width, reason)

    def run(self) -> None:
        while True:
            self.plan.varying, self.plan._varying_set = [], set()
            self.plan.loads, self.plan.stores = [], []
            self.iv_derived = {self.iv}
            for v in self.forced:
                self.plan.add(v)
            self.changed = False
            self.block(self.loop.body)
            if not self.changed:
                return

    def block(self, block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, AffineApplyOp):
            if any(v in self.iv_derived for v in op.operands):
                self.iv_derived.add(op.result)
            return
        if isinstance(op, AffineAccessInterface) and op.vector_type is None:
            self.access(op)
            return
        if isinstance(op, AffineForOp):
            self.inner_loop(op)
            return
        if isinstance(op, AffineIfOp):
            self.conditional(op)
            return
        for v in op.operands:
            if v in self.iv_derived:
                raise self.refuse(f"{_what(op)} uses {value_name(v)}, an index value that depends on "
                                  f"{loop_name(self.loop)} (only access subscripts may)")
        if not isinstance(op, AffineYieldOp):
            self.compute(op)

    def depends_on_iv(self, values) -> bool:
        return any(v in self.iv_derived or self.plan.is_varying(v) for v in values)

    def compute(self, op: Operation) -> None:
        types = [v.type for v in (*op.operands, *op.results)]
        if op.regions or any(isinstance(t, VectorType) for t in types):
            raise self.refuse(f"{_what(op)} cannot be vectorized (ops with regions or on vectors are refused)")
        varying = any(self.plan.is_varying(v) for v in op.operands)
        if not varying:
            if not _may_stay_scalar(op):
                raise self.refuse(f"{_what(op)} cannot be vectorized (calls, allocations, non-affine stores and ops "
                                  f"without element-wise semantics are refused)")
            return
        if not isinstance(op, _VECTOR_OPS):
            raise self.refuse(f"{_what(op)} takes a value that varies with {loop_name(self.loop)} and has no "
                              f"element-wise vector form")
        for r in op.results:
            self.vary(r, op)

    def vary(self, v: Value, op: Operation) -> None:
        if not isinstance(v.type, (FloatType, IntegerType)):
            raise self.refuse(f"{_what(op)} gives {value_name(v)} of type {v.type}, which would vary with "
                              f"{loop_name(self.loop)} (only float and integer values become vectors)")
        self.plan.add(v)

    def inner_loop(self, inner: AffineForOp) -> None:
        n = inner.lower_bound_map.num_inputs + inner.upper_bound_map.num_inputs
        if self.depends_on_iv(inner.operands[:n]):
            raise self.refuse(f"the bounds of inner loop {loop_name(inner)}{at_location(inner)} depend on "
                              f"{loop_name(self.loop)}")
        if any(v in self.iv_derived for v in inner.inits):
            raise self.refuse(f"inner loop {loop_name(inner)}{at_location(inner)} carries an index value that "
                              f"depends on {loop_name(self.loop)}")
        for arg, init, res in zip(inner.iter_args, inner.inits, inner.results):
            if self.plan.is_varying(init) or self.plan.is_varying(arg):
                self.vary(arg, inner)
                self.plan.add(res)
        self.block(inner.body)
        term = inner.body.terminator
        for arg, y in zip(inner.iter_args, term.operands):
            if self.plan.is_varying(y) and not self.plan.is_varying(arg):
                self.vary(arg, inner)
                self.forced.append(arg)
                self.changed = True

    def conditional(self, op: AffineIfOp) -> None:
        if self.depends_on_iv(op.operands):
            raise self.refuse(f"the condition of {_what(op)} depends on {loop_name(self.loop)}")
        blocks = [b for b in (op.then_block, op.else_block) if b is not None]
        for b in blocks:
            self.block(b)
        for k, r in enumerate(op.results):
            if any(self.plan.is_varying(b.terminator.operands[k]) for b in blocks):
                self.vary(r, op)

    def access(self, op: AffineLoadOp | AffineStoreOp) -> None:
        is_store = op.is_write
        if is_store and op.value_to_store in self.iv_derived:
            raise self.refuse(f"{_what(op)} stores {value_name(op.value_to_store)}, an index value that depends on "
                              f"{loop_name(self.loop)}")
        kind = self.subscript_kind(op)
        if kind == "uniform":
            if is_store:
                raise self.refuse(f"{_what(op)} writes {value_name(op.memref)} at the same address in every "
                                  f"iteration of {loop_name(self.loop)}")
            return
        el = op.memref.type.element_type
        if not isinstance(el, (FloatType, IntegerType)) or el.width == 1:
            raise self.refuse(f"{_what(op)} accesses a memref of {el}, which is not vectorized")
        if is_store:
            self.plan.stores.append(op)
        else:
            self.plan.loads.append(op)
            self.plan.add(op.result)

    def subscript_kind(self, op: AffineLoadOp | AffineStoreOp) -> str:
        """``"uniform"`` (the IV is not in the subscripts) or ``"contiguous"`` (only in the last one,
        with coefficient 1); anything else raises: it would need a gather/scatter."""
        leaves: list[Value] = []
        subs = access_subscripts(op, leaves)
        k = next((i for i, v in enumerate(leaves) if v is self.iv), None)
        if k is None:
            return "uniform"
        iv = loop_name(self.loop)
        names = [value_name(v) for v in leaves]
        text = ", ".join(e.to_str(names) for e in subs)
        where = f"{_what(op)} would need a gather/scatter: {value_name(op.memref)}[{text}]"
        if any(k in e.used_dims() for e in subs[:-1]):
            raise self.refuse(f"{where} varies with {iv} in a dimension other than the last")
        last = subs[-1]
        coeff = last.coefficient_of_dim(k)
        if k in (last - AffineExpr.dim(k) * coeff).used_dims():
            raise self.refuse(f"{where} uses {iv} inside a floordiv/ceildiv/mod")
        if coeff != 1:
            raise self.refuse(f"{where} is strided in {iv} (stride {coeff})")
        return "contiguous"


def _check_dependences(loop: AffineForOp, width: int) -> None:
    for dep in analysis.dependences(loop):
        if dep.carried_at(1):
            raise _refuse(loop, width, f"a dependence between its iterations forbids it: {dep}", dep)
