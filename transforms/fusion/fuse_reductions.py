"""``affine-reduce-reduce-fusion``: a reduction loop and a later sibling loop whose reductions read its result
become one loop, the later partial results rebased whenever the running value changes (online softmax).

The two loops ``P`` and ``C`` (same block, identical bounds and step, no iter_args) are::

    affine.for %j ... { m = max(m, x[%j]) }           affine.for %j ... {
    s = 0                                               m_old = m;  m = max(m_old, x[%j])
    affine.for %j ... { s = s + exp(x[%j] - m) }   ->   s = s * exp(m_old - m) + exp(x[%j] - m)
                                                      }

``P`` carries a memory reduction of ``m`` (any kind of :data:`analysis.REDUCTION_OPS`); ``C`` reads ``m``'s final
value and carries ``addf`` reductions whose summands are *products that rebase*: with ``m`` entering only through
factors ``exp(k * m + a)`` / ``exp2(k * m + a)`` (``k`` a product of values fixed during the loop, ``a`` free of
``m``), multiplied or divided together with factors free of ``m``. A sum of such terms taken against ``m_old`` is
the sum against ``m_new`` times ``exp(k * (m_new - m_old))`` (``+`` distributes over ``*``), so ``C``'s running sums
are multiplied by that ratio after each update of ``m`` (a sum still 0 stays 0: the ratio may overflow) and every
term is taken against the current ``m``: after the last iteration, against the final one, as the unfused nest
computes them. All of it is derived from the ops;
nothing names softmax.

Legal when nothing else flows between the loops but from an iteration of ``P`` to the same iteration of ``C``:
``C`` reads ``m`` only at the element ``P`` reduces into and only for those summands (no per-iteration store of
it); ``C`` writes nothing ``P`` accesses; what else ``P`` writes and ``C`` reads (attention's row of scores) has
one subscript in both, varying with the IV; ``C``'s sums may sit in inner loops that do not carry them
(``O[i, d] += p * V[j, d]`` under ``d``); the ops between the loops (the sums' initialization) touch nothing
``P`` writes and move before ``P``. Otherwise the pair is refused with the reason and left as it is.

A later loop may read several reductions of the producer, and a loop this pass fused carries its rescaled sums as
reductions (the pass keeps what it fused: ``carried``): a third loop summing ``exp(x - m) / l * y`` (``l`` the
second loop's sum, a term may be a power of a sum) is rescaled by ``exp(m_old - m_new) * l_old / l_new`` -- the
softmax-weighted sums of attention. A sum still 0 divides as 1 there (every term so far is 0 then). For
attention's nests (``weighted-sums``, :mod:`.fuse_reductions_nest`) the pass first merges the loop writing the
probabilities into the ``P @ V`` sum, split from its outer loop over ``d``: each query row becomes one loop over the
keys (FlashAttention's online softmax, found from the library's unfused nests).

Floating point: the result differs from the unfused nest's by reassociation (each partial sum is rescaled instead
of each term being taken against the final ``m`` once): relative differences of a few ulps per rescale in f32.
Where ``m`` is still a max's (min's) identity, ``-inf`` (``+inf``), every element so far being that value, the
terms are taken against ``0`` instead (``exp(-inf - 0) = 0``, where ``-inf - -inf`` would be NaN and poison the
sum), and rebased from ``0`` when a finite value comes. The one visible difference: a row whose every element
is ``-inf`` has the sum ``0`` here, NaN unfused (softmax's output is NaN in both).

A sum of squared deviations from a mean (the mean's sum finalized between the loops: layer norm's variance) fuses
with that sum by Welford's update instead: :mod:`.fuse_reductions_mean`.

Not an upstream MLIR pass (PolyBlocks' reduce-reduce fusion; FlashAttention's online softmax).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp
from affine_ir.dialects.arith import OPS as ARITH
from affine_ir.dialects.arith import CmpFOp, ConstantOp, SelectOp
from affine_ir.dialects.math import OPS as MATH
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.traits import IsTerminator
from analysis.loops import Reduction, loop_reductions, reduction_identity

from ..errors import RefusalKind, TransformError
from ..loop_utils import loop_name, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .fuse_reductions_mean import MeanPlan, finalizer_of, mean_values, plan_mean, rewrite_squares
from .fuse_reductions_nest import merge_into, merge_problem, split_problem, split_reduction_nest

__all__ = ["Factor", "ReduceReduceFusion", "build_ratio", "fuse_reductions", "plan_reduce_reduce",
           "reduce_reduce_candidates", "term_factor"]

PASS = "affine-reduce-reduce-fusion"
#: What the algebra knows of each op (by class): the float arithmetic, and the exponentials (by their base) whose
#: argument may hold the producer's value linearly.
ROLES = {ARITH["addf"]: "add", ARITH["subf"]: "sub", ARITH["negf"]: "neg", ARITH["mulf"]: "mul", ARITH["divf"]: "div",
         MATH["exp"]: "exp", MATH["exp2"]: "exp2"}


class _NotRebasable(Exception):
    """The summand is not a product that rebases; the message says which op."""


@dataclass(frozen=True)
class Linear:
    """``sign * prod(muls) / prod(divs) * m``: the part of a value linear in the producer's value ``m`` (number
    ``var`` of the reductions the later loop reads). In a ``pow`` factor, ``sign`` is the power of ``m``."""

    sign: int
    muls: tuple[Value, ...] = ()
    divs: tuple[Value, ...] = ()
    var: int = 0

    def key(self) -> tuple:
        return self.var, self.sign, tuple(map(id, self.muls)), tuple(map(id, self.divs))


@dataclass(frozen=True)
class Factor:
    """A summand's dependence on the producer's values: the product over ``terms`` of ``(base, k)``: ``base ** (k *
    m)`` for ``exp``/``exp2``, ``m ** k.sign`` for ``pow`` (a sum's value multiplying or dividing the term)."""

    terms: tuple[tuple[str, Linear], ...]

    def key(self) -> tuple:
        return tuple(sorted((b, k.key()) for b, k in self.terms))


@dataclass(frozen=True)
class Plan:
    """What :func:`fuse_reductions` does with ``producer`` and ``consumer``: the producer's reduction whose
    value the consumer reads (``reads``: the loads of it), and the consumer's reductions with their factors
    (None: the summands do not depend on ``m``)."""

    producer: AffineForOp
    consumer: AffineForOp
    reduction: Reduction
    reads: tuple[AffineLoadOp, ...]
    rebased: tuple[tuple[Reduction, Factor | None], ...]
    between: tuple[Operation, ...]
    mean: MeanPlan | None = None
    #: every reduction of the producer the consumer reads (var k of the factors), with its loads; the first is
    #: ``reduction``
    read: tuple[tuple[Reduction, tuple[AffineLoadOp, ...]], ...] = ()
    #: the producer's reductions (what the fused loop carries, with the consumer's sums)
    carried: tuple[Reduction, ...] = ()

    def carried_after(self) -> list[Reduction]:
        """The memory reductions the fused loop carries: the producer's and the consumer's rebased sums."""
        return [*self.carried, *(r for r, _ in self.rebased)]

    def describe(self) -> str:
        if self.mean is not None:
            sums = ", ".join(value_name(r.value) for r, _ in self.mean.squares)
            return f"the sum of {value_name(self.reduction.value)} in {loop_name(self.producer)} (a mean) and the " \
                   f"sums of squared deviations {sums} of {loop_name(self.consumer)} (Welford's update)"
        sums = ", ".join(f"{value_name(r.value)} ({_factor_text(f)})" for r, f in self.rebased)
        return f"the {self.reduction.kind} of {value_name(self.reduction.value)} in {loop_name(self.producer)} " \
               f"and the sums {sums} of {loop_name(self.consumer)} that read it"


def _factor_text(f: Factor | None) -> str:
    if f is None:
        return "free of the producer's value"
    parts = []
    for base, k in f.terms:
        coef = "*".join([value_name(v) for v in k.muls] + [f"1/{value_name(v)}" for v in k.divs])
        name = f"m{k.var}" if k.var else "m"
        parts.append(f"{name}^{k.sign}" if base == "pow" else
                     f"{base}({'-' if k.sign < 0 else ''}{coef + ' * ' if coef else ''}{name})")
    return "rescaled by " + " * ".join(parts)


def _refuse(p: AffineForOp, c: AffineForOp, reason: str, kind: RefusalKind = RefusalKind.UNSUPPORTED):
    return TransformError(PASS, f"cannot fuse the reductions of {loop_name(p)} and {loop_name(c)}: {reason}",
                          loops=(p, c), kind=kind)


# -- the summands' algebra ------------------------------------------------------------------------------
class _Algebra:
    """How values computed in ``loop``'s body depend on ``m`` (the values of ``m_values``)."""

    def __init__(self, loop: AffineForOp, m_values: set[Value] | dict[Value, int], sums: frozenset[int] = frozenset()):
        self.loop = loop
        self.vars = m_values if isinstance(m_values, dict) else dict.fromkeys(m_values, 0)
        self.m = set(self.vars)
        self.sums = sums  # the vars that are sums: a term may be a power of them
        self._depends: dict[Value, bool] = {}

    def depends(self, v: Value) -> bool:
        """Whether ``v`` is computed from ``m`` in the loop (memoized: terms are DAGs)."""
        if v in self.m:
            return True
        if v not in self._depends:
            op = v.owner
            self._depends[v] = isinstance(op, Operation) and _inside(v, self.loop) and \
                any(self.depends(x) for x in op.operands)
        return self._depends[v]

    def fixed(self, v: Value) -> bool:
        """Whether ``v`` keeps one value during the loop (defined outside it)."""
        return not _inside(v, self.loop)

    def linear(self, v: Value) -> Linear:
        """``v``'s part linear in ``m`` (``v`` depends on ``m``), or _NotRebasable."""
        if v in self.m:
            return Linear(1, var=self.vars[v])
        op = v.owner
        role = ROLES.get(type(op))
        dep = [self.depends(x) for x in op.operands]
        if role in ("add", "sub") and sum(dep) == 1:
            k = self.linear(op.operands[dep.index(True)])
            return _negated(k) if role == "sub" and dep[1] else k
        if role == "neg":
            return _negated(self.linear(op.operands[0]))
        if role in ("mul", "div") and sum(dep) == 1 and (dep[0] or role == "mul"):
            other = op.operands[1 - dep.index(True)]
            if not self.fixed(other):
                raise _NotRebasable(f"'{op.name}' scales the producer's value by {value_name(other)}, which "
                                    f"changes during the loop")
            k = self.linear(op.operands[dep.index(True)])
            return Linear(k.sign, k.muls + (other,), k.divs, k.var) if role == "mul" else \
                Linear(k.sign, k.muls, k.divs + (other,), k.var)
        raise _NotRebasable(f"'{op.name}' of the producer's value is not linear in it")

    def factor(self, v: Value) -> Factor | None:
        """``v``'s factors holding ``m`` (None: ``v`` does not depend on it), or _NotRebasable."""
        if not self.depends(v):
            return None
        if v in self.m:
            if self.vars[v] in self.sums:
                return Factor((("pow", Linear(1, var=self.vars[v])),))
            raise _NotRebasable("the producer's value itself is a factor (a rescale would divide by it)")
        op = v.owner
        role = ROLES.get(type(op))
        if role in ("exp", "exp2"):
            return Factor(((role, self.linear(op.operands[0])),))
        if role in ("mul", "div", "neg"):
            parts = [self.factor(x) for x in op.operands]
            terms = list(parts[0].terms if parts[0] else ())
            if len(parts) > 1 and parts[1]:
                terms += [(b, _negated(k) if role == "div" else k) for b, k in parts[1].terms]
            return Factor(tuple(terms))
        raise _NotRebasable(f"'{op.name}' of the producer's value is not a product of exponentials of it")


def _negated(k: Linear) -> Linear:
    return Linear(-k.sign, k.muls, k.divs, k.var)


def term_factor(loop: AffineForOp, value: Value, term: Value) -> Factor | None:
    """How ``term`` (computed in ``loop``) scales with ``value``: its factors holding ``value`` (None when it does
    not depend on it), or None also when it is not a product that rebases (see the module docstring)."""
    try:
        return _Algebra(loop, {value}).factor(term)
    except _NotRebasable:
        return None


def build_ratio(at, f: Factor, old: Value, new: Value) -> Value:
    """The ratio by which terms of factor ``f`` change when the value goes from ``old`` to ``new``, built by
    ``at`` (``add(op) -> result``, ``arith(name, *operands) -> result``, ``location``): the ops this pass puts
    in the fused loop."""
    return _ratio(at, f, old, new)


def _inside(v: Value, loop: AffineForOp) -> bool:
    op = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op
    return False


# -- the plan -------------------------------------------------------------------------------------------
def _same_bounds(p: AffineForOp, c: AffineForOp) -> bool:
    return p.step == c.step and p.lower_bound_map == c.lower_bound_map and \
        p.upper_bound_map == c.upper_bound_map and list(p.operands) == list(c.operands)


def _accessed(loop: Operation, write: bool | None = None) -> set[Value]:
    return {x.memref for x in loop.walk() if isinstance(x, MemRefAccessInterface) and
            (write is None or x.is_write == write)}


def _reads_of(red: Reduction, c: AffineForOp) -> list[AffineLoadOp]:
    """The loads of ``red``'s element at ``c``'s body's top level; TransformError when ``c`` accesses
    ``red``'s memref otherwise."""
    loads = []
    for x in c.walk():
        if not isinstance(x, MemRefAccessInterface) or x.memref is not red.value:
            continue
        if x.is_write:
            raise _refuse(red.store.parent_op, c, f"the later loop writes {value_name(red.value)}",
                          RefusalKind.DEPENDENCE)
        if not isinstance(x, AffineLoadOp) or x.map != red.store.map or list(x.indices) != list(red.store.indices) \
                or x.parent is not c.body:
            raise _refuse(red.store.parent_op, c, f"the later loop reads {value_name(red.value)} other than at the "
                                                  f"element the producer reduces into, in its body",
                          RefusalKind.DEPENDENCE)
        loads.append(x)
    return loads


def _consumer_reductions(c: AffineForOp) -> list[Reduction] | str:
    """``c``'s memory reductions, each element updated once per iteration of ``c`` (a reduction in an inner loop
    must vary its element with that loop's IV), or why not."""
    reds = loop_reductions(c)
    if reds is None:
        return "it carries something other than reductions"
    for r in reds:
        if not r.is_memory:
            return "it carries values in iter_args"
        loop = r.store.parent_op
        while loop is not c:
            if not isinstance(loop, AffineForOp) or not _varies_with(r.store, loop.induction_var):
                return f"its reduction into {value_name(r.value)} is also carried by an inner " \
                       f"{'loop' if isinstance(loop, AffineForOp) else repr(loop.name)}"
            loop = loop.parent_op
    return reds


def _varies_with(access, iv: Value) -> bool:
    """Whether a result of ``access``'s subscript is linear in ``iv`` with a nonzero coefficient."""
    amap, idx = access.map, list(access.indices)
    if iv not in idx:
        return False
    k = idx.index(iv)
    return any(e.is_pure_linear and (e.coefficient_of_dim(k) if k < amap.num_dims else
                                     e.coefficient_of_symbol(k - amap.num_dims)) for e in amap.results)


def _check_uses(alg: _Algebra, c: AffineForOp, reds: list[Reduction]) -> str | None:
    """Why ``m`` reaches something in ``c`` other than the sums' terms through pure ops, or None."""
    chain_ops = {op for r in reds for op in r.ops}
    work, seen = list(alg.m), set()
    while work:
        x = work.pop()
        for u in x.uses:
            if u.op in chain_ops:
                continue  # a term of a sum (the chain value itself never depends on m)
            holder = u.op.parent_op
            if not u.op.is_pure or len(u.op.results) != 1 or not isinstance(holder, AffineForOp) or \
                    not (holder is c or _inside(holder.induction_var, c)):
                return f"'{u.op.name}' uses a value computed from the producer's per iteration, not only as a " \
                       f"sum's term (it cannot be rebased)"
            if u.op not in seen:
                seen.add(u.op)
                work.append(u.op.results[0])
    return None


def _summands(r: Reduction) -> list[Value]:
    chain = {op.results[0] for op in r.ops} | {r.load.result}
    return [v for op in r.ops for v in op.operands if v not in chain]


def plan_reduce_reduce(p: AffineForOp, c: AffineForOp, carried: list[Reduction] | None = None) -> Plan:
    """The fusion of reduction loop ``p`` with the later sibling ``c`` (see the module docstring), or
    TransformError with the reason (nothing changed); of kind NO_DEPENDENCE when ``c`` reads no reduction of
    ``p``. ``carried``: ``p``'s reductions when the caller knows them (a loop this pass fused carries rescaled
    sums, which :func:`analysis.loops.loop_reductions` does not call reductions); default: that analysis's."""
    for loop in (p, c):
        if not isinstance(loop, AffineForOp) or loop.iter_args or loop.results:
            raise TransformError(PASS, f"{loop_name(loop)} is not an affine.for without iter_args",
                                 kind=RefusalKind.INVALID_REQUEST)
    reds = carried if carried is not None else (loop_reductions(p) or [])
    read = [(r, tuple(loads)) for r in reds if r.is_memory for loads in [_reads_of(r, c)] if loads]
    if not read:
        raise _refuse(p, c, "the later loop reads no reduction of the earlier", RefusalKind.NO_DEPENDENCE)
    if p.parent is not c.parent or p.parent.index_of(p) > p.parent.index_of(c):
        raise _refuse(p, c, "they are not siblings in this order", RefusalKind.INVALID_REQUEST)
    if not _same_bounds(p, c):
        raise _refuse(p, c, "their bounds or steps differ")
    red, loads = read[0]
    creds = _consumer_reductions(c)
    if isinstance(creds, str):
        raise _refuse(p, c, creds)
    _check_memory(p, c, {r.value for r, _ in read}, reds)
    alg = _Algebra(c, {ld.result: k for k, (_, lds) in enumerate(read) for ld in lds},
                   frozenset(k for k, (r, _) in enumerate(read) if r.kind == "addf"))
    block = p.parent
    between = block.ops[block.index_of(p) + 1:block.index_of(c)]
    if any(getattr(op, "memref", None) is r.value for op in between for r, _ in read):
        if len(read) > 1:
            raise _refuse(p, c, "the ops between them read the producer's values", RefusalKind.DEPENDENCE)
        return _plan_mean(p, c, red, loads, creds, alg, between)
    rebased = tuple((r, _rebase(alg, r, p, c)) for r in creds)
    why = _check_uses(alg, c, creds)
    if why:
        raise _refuse(p, c, why, RefusalKind.DEPENDENCE)
    if all(f is None for _, f in rebased):
        raise _refuse(p, c, "no sum of the later loop reads the producer's value", RefusalKind.DEPENDENCE)
    return Plan(p, c, red, tuple(ld for _, lds in read for ld in lds), rebased, tuple(_between(p, c)),
                read=tuple(read), carried=tuple(reds))


def _plan_mean(p, c, red: Reduction, loads, creds, alg: _Algebra, between) -> Plan:
    """A mean finalized between the loops (see :mod:`.fuse_reductions_mean`), or a refusal."""
    fin = finalizer_of(red, between, p)
    if isinstance(fin, str):
        raise _refuse(p, c, fin, RefusalKind.DEPENDENCE)
    try:
        mean = plan_mean(p, c, red, creds, loads, alg, fin, _summands)
    except _NotRebasable as e:
        raise _refuse(p, c, str(e)) from None
    if isinstance(mean, str):
        raise _refuse(p, c, mean)
    why = _check_uses(alg, c, creds)
    if why:
        raise _refuse(p, c, why, RefusalKind.DEPENDENCE)
    return Plan(p, c, red, tuple(loads), (), tuple(_between(p, c, skip=fin)), mean)


def _rebase(alg: _Algebra, r: Reduction, p: AffineForOp, c: AffineForOp) -> Factor | None:
    """The factor every summand of ``r`` shares (None when none depends on ``m``), or a refusal."""
    factors = []
    for v in _summands(r):
        try:
            factors.append(alg.factor(v))
        except _NotRebasable as e:
            raise _refuse(p, c, f"the sum into {value_name(r.value)}: {e}") from None
    keys = {None if f is None else f.key() for f in factors}
    if len(keys) > 1:
        raise _refuse(p, c, f"the terms of the sum into {value_name(r.value)} scale differently with the "
                            f"producer's value (one rescale cannot rebase them)")
    if factors[0] is not None and r.kind != "addf":
        raise _refuse(p, c, f"the {r.kind} into {value_name(r.value)} is not a sum (only sums are rebased)")
    return factors[0]


def _check_memory(p: AffineForOp, c: AffineForOp, read: set[Value], reds: list[Reduction]) -> None:
    """Refuse unless the only memory flowing between the loops (besides the values ``read`` of ``p``'s reductions
    ``reds``) goes from an iteration of ``p`` to the same iteration of ``c`` (fused, ``p``'s body runs first in
    each iteration)."""
    p_writes, c_writes = _accessed(p, True), _accessed(c, True)
    for m in c_writes & _accessed(p):
        raise _refuse(p, c, f"the later loop writes {value_name(m)}, which the producer accesses",
                      RefusalKind.DEPENDENCE)
    for m in (p_writes - read) & _accessed(c):
        why = _not_same_iteration(p, c, m)
        if why:
            raise _refuse(p, c, f"{value_name(m)} written by the producer and read by the later loop: {why}",
                          RefusalKind.DEPENDENCE)


def _not_same_iteration(p: AffineForOp, c: AffineForOp, m: Value) -> str | None:
    """Why accesses of ``m`` in ``p`` and ``c`` may touch one element in different iterations, or None: every
    access must have one subscript (map and operands, the IVs of ``p`` and ``c`` taken as one), and a result of
    it linear in that IV with a nonzero coefficient (so different iterations touch different elements)."""
    keys = set()
    for loop in (p, c):
        for x in loop.walk():
            if isinstance(x, MemRefAccessInterface) and x.memref is m:
                amap, idx = getattr(x, "map", None), getattr(x, "indices", None)
                if amap is None or idx is None:
                    return f"'{x.name}' has no affine subscript"
                keys.add((amap, tuple(p.induction_var if v is loop.induction_var else v for v in idx)))
    if len(keys) != 1:
        return "its subscripts differ between the loops"
    access = next(x for x in p.walk() if isinstance(x, MemRefAccessInterface) and x.memref is m)
    if not _varies_with(access, p.induction_var):
        return "its subscript may repeat across the loops' iterations"
    return None


def _between(p: AffineForOp, c: AffineForOp, skip: tuple[Operation, ...] = ()) -> list[Operation]:
    """The ops between the loops but ``skip``, which move before ``p``; a refusal when one cannot."""
    block = p.parent
    ops = [op for op in block.ops[block.index_of(p) + 1:block.index_of(c)] if op not in skip]
    p_writes, p_all = _accessed(p, True), _accessed(p)
    for op in ops:
        effects = op.memory_effects()
        if effects is None:
            raise _refuse(p, c, f"'{op.name}' between them has unknown effects")
        mine = _accessed(op) if op.regions else ({op.memref} if isinstance(op, MemRefAccessInterface) else set())
        writes = _accessed(op, True) if op.regions else ({op.memref} if isinstance(op, MemRefAccessInterface)
                                                          and op.is_write else set())
        if mine & p_writes or writes & p_all:
            raise _refuse(p, c, f"'{op.name}' between them accesses memory the producer "
                                f"{'writes' if mine & p_writes else 'reads'}", RefusalKind.DEPENDENCE)
        if any(_inside(v, p) for x in op.walk() for v in x.operands):
            raise _refuse(p, c, f"'{op.name}' between them uses a value of the producer")
    return list(ops)


def reduce_reduce_candidates(block_owner: Operation) -> list[tuple[AffineForOp, AffineForOp]]:
    """The sibling ``affine.for`` pairs (earlier, later) directly in the blocks of ``block_owner``'s regions."""
    pairs = []
    for region in block_owner.regions:
        for block in region.blocks:
            loops = [x for x in block.ops if isinstance(x, AffineForOp)]
            pairs += [(a, b) for i, a in enumerate(loops) for b in loops[i + 1:]]
    return pairs


# -- the rewrite ----------------------------------------------------------------------------------------
def fuse_reductions(p: AffineForOp, c: AffineForOp, carried: list[Reduction] | None = None) -> AffineForOp:
    """Fuse ``c`` into ``p`` (see the module docstring): returns ``p``, now running both, ``c`` erased and the
    ops between them moved before ``p``. Guarantees: each of ``c``'s sums equals the unfused one up to
    floating-point reassociation (and the identity case stated above); refused with TransformError naming
    the reason, the IR unchanged. ``carried``: as :func:`plan_reduce_reduce`'s."""
    return _fuse(plan_reduce_reduce(p, c, carried))


def _fuse(plan: Plan) -> AffineForOp:
    p, c = plan.producer, plan.consumer
    block = p.parent
    for op in plan.between:
        op.detach()
        block.insert_before(p, op)
    at = _At(p.body, p.body.terminator, c.location)
    red = plan.reduction
    c.induction_var.replace_all_uses_with(p.induction_var)
    if plan.mean is not None:
        means = mean_values(plan.mean, p, red, at)
        _move_body(c, p)
        rewrite_squares(plan.mean, means, plan.reads)
        c.erase()
        return p
    old, new = {}, {}
    divisors = {k.var for _, f in plan.rebased if f is not None for base, k in f.terms if base == "pow"}
    for k, (r, loads) in enumerate(plan.read or ((red, plan.reads),)):
        old[k], new[k] = _bases(at, (r.load.result, r.store.value), r, k in divisors)
        for ld in loads:
            ld.result.replace_all_uses_with(new[k])
            ld.erase()
    ratios: dict[tuple, Value] = {}
    for _, f in plan.rebased:
        if f is not None and f.key() not in ratios:
            ratios[f.key()] = _ratio(at, f, old, new)
    _move_body(c, p)
    for r, f in plan.rebased:
        if f is not None:
            _scale_after_load(r, ratios[f.key()])
    c.erase()
    return p


def _move_body(c: AffineForOp, p: AffineForOp) -> None:
    """``c``'s body ops to the end of ``p``'s (before its terminator)."""
    for op in [x for x in c.body.ops if not x.has_trait(IsTerminator)]:
        op.detach()
        p.body.insert_before(p.body.terminator, op)


class _At:
    """Inserts ops before ``anchor`` in ``block``."""

    def __init__(self, block, anchor: Operation, location):
        self.block, self.anchor, self.location = block, anchor, location

    def add(self, op: Operation) -> Value:
        self.block.insert_before(self.anchor, op)
        return op.results[0]

    def arith(self, name: str, *operands: Value) -> Value:
        return self.add(ARITH[name](*operands, location=self.location))


def _bases(at: _At, values: tuple[Value, ...], red: Reduction, divisor: bool = False) -> list[Value]:
    """``values``, each replaced by 0 where it is the max's (min's) infinite identity; for a sum that divides
    terms (``divisor``), by 1 where it is 0 (every term so far is 0 then, and so is every later sum's)."""
    if red.kind in ("maximumf", "minimumf", "maxnumf", "minnumf"):
        special, base = reduction_identity(red.kind, values[0].type), 0.0
    elif divisor:
        special, base = 0.0, 1.0
    else:
        return list(values)
    t = values[0].type
    ident = at.add(ConstantOp.of(special, t, location=at.location))
    repl = at.add(ConstantOp.of(base, t, location=at.location))
    return [at.add(SelectOp(at.add(CmpFOp("oeq", m, ident, location=at.location)), repl, m, location=at.location))
            for m in values]


def _ratio(at: _At, f: Factor, old, new) -> Value:
    """The product over ``f``'s terms of ``base ** (k * (new - old))`` (``exp``/``exp2``) and ``(new / old) ** n``
    (``pow``); ``old``/``new``: the values before and after the update, a Value (one reduction) or by var."""
    def of(x, var):
        return x[var] if isinstance(x, dict) else x

    ratio = None
    for base, k in f.terms:
        o, n = of(old, k.var), of(new, k.var)
        if base == "pow":
            e = None
            for _ in range(abs(k.sign)):
                q = at.arith("divf", n, o) if k.sign > 0 else at.arith("divf", o, n)
                e = q if e is None else at.arith("mulf", e, q)
        else:
            d = at.arith("subf", n, o) if k.sign > 0 else at.arith("subf", o, n)
            for v in k.muls:
                d = at.arith("mulf", d, v)
            for v in k.divs:
                d = at.arith("divf", d, v)
            e = at.add(MATH[base](d, location=at.location))
        ratio = e if ratio is None else at.arith("mulf", ratio, e)
    return ratio


def _scale_after_load(r: Reduction, ratio: Value) -> None:
    """Make ``r``'s chain start from its loaded value times ``ratio``, a zero sum kept as it is (a rescale from
    the identity's base 0 to a far value may overflow: 0 x inf would be NaN where the sum is exactly 0)."""
    load = r.load
    first = next(u for u in load.result.uses)
    at = _At(load.parent, first.op, load.location)
    s = load.result
    zero = at.add(ConstantOp.of(0.0, s.type, location=load.location))
    scaled = at.add(SelectOp(at.add(CmpFOp("oeq", s, zero, location=load.location)), s, at.arith("mulf", s, ratio),
                             location=load.location))
    first.op.set_operand(first.index, scaled)


# -- the pass -------------------------------------------------------------------------------------------
@register_pass
@dataclass(frozen=True)
class ReduceReduceFusion(Pass):
    """``affine-reduce-reduce-fusion``: see the module docstring. Each sibling pair of loops whose later one's
    sums read the earlier one's reduction is fused (repeatedly, so a third loop can join); every pair in which
    the later loop reads a reduction of the earlier gets a decision in the trace."""

    name = PASS
    summary = "Fuse a reduction with the later reductions that read it, rebasing them as it changes (online softmax)"
    means: bool = option(True, "also fuse a sum of squared deviations with the mean's sum (Welford's update; "
                               "gpu-map-reductions does not combine its partials yet)")
    weighted_sums: bool = option(True, "also fuse softmax-weighted sums (attention's P @ V): a parallel loop writing "
                                       "a row from the reduction's values merged into the sum over that row, split "
                                       "from its outer parallel loop (fusion/fuse_reductions_nest.py; "
                                       "gpu-map-reductions does not map the result to blocks yet)")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        seen: set[tuple[int, int]] = set()
        carried: dict[AffineForOp, list[Reduction]] = {}  # what the loops fused here carry (rescaled sums too)
        changed = True
        while changed:
            changed = False
            for owner in [func] + [x for x in func.walk() if isinstance(x, AffineForOp)]:
                for p, c in reduce_reduce_candidates(owner):
                    if (id(p), id(c)) in seen:
                        continue
                    seen.add((id(p), id(c)))
                    if self._try(p, c, ctx, carried):
                        changed = True
                        break
                if changed:
                    break
            if not changed and self.weighted_sums:
                merged = self._weighted_sums(func, ctx, carried)
                if merged is not None:  # its pairs are new
                    seen = {pair for pair in seen if id(merged) not in pair}
                    changed = True

    def _weighted_sums(self, func: FuncOp, ctx: PassContext, carried: dict) -> AffineForOp | None:
        """Prepare one softmax-weighted sum for fusion (:mod:`.fuse_reductions_nest`): for a reduction loop ``p``
        and later siblings ``q`` (parallel, reading ``p``'s values, writing a row) and ``c`` (summing that row,
        maybe under an outer parallel loop), split ``c`` and merge ``q`` into its row loop. Returns the row loop
        merged into, or None."""
        for p in [x for x in func.walk() if isinstance(x, AffineForOp)]:
            reds = carried.get(p)
            if reds is None:
                continue
            values = {r.value for r in reds if r.is_memory}
            block = p.parent
            later = [x for x in block.ops[block.index_of(p) + 1:] if isinstance(x, AffineForOp)]
            for q, c in zip(later, later[1:]):
                if not any(getattr(x, "memref", None) in values for x in q.walk()):
                    continue
                merged = self._prepare(q, c, ctx)
                if merged is not None:
                    return merged
        return None

    @staticmethod
    def _prepare(q: AffineForOp, c: AffineForOp, ctx: PassContext) -> AffineForOp | None:
        if merge_problem(q, c, c) is None:
            merge_into(q, c)
            ctx.applied(c, f"merged {loop_name(q)} into {loop_name(c)} (it writes what the sums read, in the same "
                           f"iteration)")
            return c
        if split_problem(c) is not None:
            return None
        inner = [x for x in c.body.ops if isinstance(x, AffineForOp)][-1]
        if merge_problem(q, inner, c) is not None:
            return None
        names = loop_name(c), loop_name(inner)
        _, nest = split_reduction_nest(c)
        why = merge_problem(q, nest, nest)
        if why is not None:
            ctx.note(nest, f"split ({names[0]}, {names[1]}) but did not merge {loop_name(q)}: {why}")
            return nest
        merge_into(q, nest)
        ctx.applied(nest, f"split ({names[0]}, {names[1]}) into its initialization and ({names[1]}, {names[0]}), "
                          f"and merged {loop_name(q)} into {names[1]} (it writes the row the sums read, in the same "
                          f"iteration)")
        return nest

    def _try(self, p: AffineForOp, c: AffineForOp, ctx: PassContext, carried: dict) -> bool:
        try:
            plan = plan_reduce_reduce(p, c, carried.get(p))
            if plan.mean is not None and not self.means:
                raise _refuse(p, c, "a mean's variance, and means=false")
        except TransformError as e:
            if e.kind not in (RefusalKind.NO_DEPENDENCE, RefusalKind.INVALID_REQUEST):
                ctx.refused(c, e)
            return False
        text = plan.describe()
        _fuse(plan)
        if plan.mean is None:
            carried[p] = plan.carried_after()
        how = "the squares taken against the running mean" if plan.mean is not None else \
            f"the sums rebased when the {plan.reduction.kind} changes"
        ctx.applied(p, f"fused {text}: one pass, {how}")
        return True
