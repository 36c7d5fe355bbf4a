"""Op traits and memory effects: what an op *is*, declared once on its class, asked everywhere.

MLIR and xDSL put these facts on the op; so does this IR. Passes and analyses ask the traits,
the effects and the interfaces (:mod:`affine_ir.interfaces`) instead of comparing op names, so
an op added later with the right declarations works in them without edits there.

Declaring
---------
A trait is a marker class (a subclass of :class:`OpTrait`); an op class lists its own in a
``traits`` class attribute, and inherits those of its base classes (``Operation.__init_subclass__``
unites them)::

    class AddFOp(ElementwiseOp):            # ElementwiseOp declares Pure, SameOperandsAndResultType
        name = "arith.addf"
        traits = frozenset({Commutative})  # AddFOp.traits: all three

Memory effects (MLIR's ``MemoryEffectOpInterface``) are derived from the traits by
``Operation.memory_effects()``: ``()`` for an op with :class:`NoMemoryEffect` (so every
:class:`Pure` op), the union of the nested ops' effects for :class:`RecursiveMemoryEffects` ops
(``affine.for/if/parallel``), else ``None``. An op with effects of its own overrides the method::

    class LoadOp(MemRefAccessInterface):   # the interface already answers READ of op.memref
        ...
    class DeallocOp(Operation):
        def memory_effects(self):
            return (MemoryEffect(EffectKind.FREE, self.operands[0]),)

Querying
--------
- ``op.has_trait(Pure)``: on an op or on its class (``AddFOp.has_trait(Commutative)``); a trait
  implies its base traits (:class:`Pure` is :class:`NoMemoryEffect` and
  :class:`AlwaysSpeculatable`).
- ``op.memory_effects()``: a tuple of :class:`MemoryEffect` (``kind``, ``value``: the memref value
  affected, or None for "some memory, which is not known"), ``()`` for none, or **None for
  unknown**: the op may read or write any memory and do anything else (``func.call``, unregistered
  ops, ``gpu.barrier``, ``gpu.launch``, ``gpu.shuffle``, and any op that declares nothing). A pass
  must treat an unknown op as it would treat a call.
- ``op.is_speculatable()`` (MLIR's ``ConditionallySpeculatable``): whether the op may run where
  its result is not needed; by default whether it has :class:`AlwaysSpeculatable` (integer
  division overrides it: a constant non-zero divisor only).
- The helpers below (MLIR's ``SideEffectInterfaces``): :func:`is_memory_effect_free`,
  :func:`has_only_read_effects`, :func:`would_be_trivially_dead`, :func:`is_trivially_dead`,
  :func:`written_values`, :func:`read_values`.
- The old class booleans ``is_pure``, ``is_terminator``, ``isolated_from_above`` and
  ``affine_scope`` stay: read-only views of :class:`Pure`, :class:`IsTerminator`,
  :class:`IsolatedFromAbove`, :class:`AffineScope` (a class body that still sets one to True
  declares the trait).

Who declares what: ``Pure``: arith, math, casts, ``vector.broadcast/reduction``, ``affine.apply/
min/max``, ``memref.dim``, gpu ids, ``gpu.subgroup_mma_compute/constant_matrix`` (and
``Commutative`` exactly on the binary ops in ``arith.COMMUTATIVE``, ``SameOperandsAndResultType``
on the elementwise ops, ``ConstantLike`` on ``arith.constant``); terminators: ``IsTerminator`` and
``NoMemoryEffect`` (``func.return``/``affine.yield`` also ``ReturnLike``); ``IsolatedFromAbove`` and
``AffineScope``: ``func.func``, ``builtin.module``; ``gpu.launch``: ``AffineScope``, ``KernelScope``;
``gpu.barrier``: ``Synchronization``; ``SubgroupCollective``: ``gpu.subgroup_mma_load_matrix/
store_matrix/compute``, ``nvgpu.ldmatrix``, ``nvgpu.mma.sync`` (``gpu.subgroup_mma_elementwise`` and
``nvgpu.mma.sync`` are also ``Pure``; ``nvgpu.device_async_copy`` READs its source and WRITEs its
destination; ``nvgpu.device_async_create_group/wait`` have unknown effects: nothing moves across them);
``WarpgroupCollective``: ``nvgpu.warpgroup.mma/mma.store``, ``nvvm.setmaxregister``,
``nvvm.wgmma.fence.aligned/commit.group.sync.aligned/wait.group.sync.aligned``; ``ViewLike`` (and
``Pure``): ``memref.view``, ``memref.cast``. The Hopper ops
(:mod:`affine_ir.dialects.nvgpu_hopper`, :mod:`affine_ir.dialects.nvvm`): the mbarrier ops, fences, waits,
``nvgpu.tma.prefetch.descriptor`` and the bulk-group ops have unknown effects (they act on barriers or
asynchronous state: never erased, nothing moves across them); ``nvgpu.mbarrier.create`` ALLOCATEs its
result; ``nvgpu.tma.async.load`` WRITEs its destination (and READs and WRITEs unnamed memory: the global
tensor and the mbarrier), ``nvgpu.tma.async.store`` READs its source (and WRITEs unnamed memory);
``nvgpu.warpgroup.generate.descriptor`` READs its shared-memory tile, ``nvgpu.warpgroup.mma`` READs and
WRITEs unnamed memory (its operands' tiles, the wgmma groups), ``nvgpu.warpgroup.mma.store`` WRITEs its
destination; ``nvgpu.warpgroup.mma.init.accumulator`` is ``Pure``, ``nvgpu.tma.create.descriptor`` has
``NoMemoryEffect`` (not speculatable: encoding can fail).
``Arithmetic``: the arith and math elementwise ops, comparisons,
``arith.select`` and casts; ``ExactFold``: every arith op but ``arith.constant``, and ``math.absf/floor/
ceil/sqrt/fma``; ``Involution``: ``arith.negf``. Effects: loads READ and stores WRITE their memref (affine,
memref, ``gpu.subgroup_mma_load/store_matrix``), ``memref.alloc/alloca`` ALLOCATE their result,
``memref.dealloc`` FREEs its operand (:func:`written_values` counts a FREE as a write).
``AffineMapValue``: ``affine.apply/min/max`` (an index value the host of a GPU program computes).

Interfaces (isinstance-able base classes of the op classes, in :mod:`affine_ir.interfaces`):
``MemRefAccessInterface`` (``memref``, ``indices``, ``value_to_store``, ``is_write``,
``vector_type``), ``AffineAccessInterface`` (adds ``map``, ``map_operands``, ``set_access``) with
``AffineReadOpInterface`` / ``AffineWriteOpInterface``, and ``LoopLikeOpInterface``
(``induction_vars``, ``body``, ``inits``, ``region_iter_args``, ``loop_results``, ``steps``,
``lower_bounds``, ``upper_bounds``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import Operation, Value

__all__ = [
    "AffineScope", "AlwaysSpeculatable", "Arithmetic", "Commutative", "ConstantLike", "EffectKind", "IsTerminator",
    "IsolatedFromAbove", "KernelScope", "MemoryEffect", "NoMemoryEffect", "OpTrait", "Pure", "RecursiveMemoryEffects",
    "ReturnLike", "SameOperandsAndResultType", "SubgroupCollective", "Synchronization", "AffineMapValue", "ExactFold",
    "Involution", "ViewLike", "WarpgroupCollective", "view_source",
    "LEGACY_FLAGS", "TraitFlag",
    "collect_traits",
    "trait_closure", "has_only_read_effects", "is_memory_effect_free", "only_allocates_results", "only_frees_memory",
    "is_trivially_dead", "nested_memory_effects", "read_values", "would_be_trivially_dead", "written_values",
    "allocating_op", "frees",
]


class OpTrait:
    """Base of the marker traits: a trait is a class, never instantiated; an op has it when one
    of its declared traits is the trait or a subclass of it."""

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} is a trait: declare the class itself, do not instantiate it")


class NoMemoryEffect(OpTrait):
    """The op reads, writes, allocates and frees no memory (``memory_effects()`` is ``()``)."""


class AlwaysSpeculatable(OpTrait):
    """The op may run where its result is not needed: it never faults, loops or traps."""


class Pure(NoMemoryEffect, AlwaysSpeculatable):
    """No memory effect and always speculatable (MLIR's ``Pure``): merged by CSE, erased when
    unused, hoisted out of loops."""


class Commutative(OpTrait):
    """The op's two operands may be swapped without changing its result (``arith.addf``)."""


class IsTerminator(OpTrait):
    """The op ends its block (``func.return``, ``affine.yield``, ``gpu.terminator``)."""


class ReturnLike(OpTrait):
    """A terminator that passes its operands to the parent op's results or to the caller."""


class SameOperandsAndResultType(OpTrait):
    """Every operand and the result have one type (checked by the verifier)."""


class IsolatedFromAbove(OpTrait):
    """The op's regions cannot use values defined outside it (``func.func``, ``builtin.module``)."""


class AffineScope(OpTrait):
    """Values at the top of the op's regions are valid affine symbols in them (MLIR's ``AffineScope``)."""


class KernelScope(OpTrait):
    """The op's regions start a fresh value scope although they may use values from above
    (``gpu.launch``): passes that reuse dominating values (CSE) do not carry host values into it,
    so a kernel keeps its own constants."""


class RecursiveMemoryEffects(OpTrait):
    """The op's effects are those of the ops in its regions (``affine.for``, ``affine.if``,
    ``affine.parallel``)."""


class ConstantLike(OpTrait):
    """The op materializes a constant attribute as its single result (``arith.constant``)."""


class Arithmetic(OpTrait):
    """The op computes its result from its operands' values alone, one arithmetic instruction
    per element: the arith and math computations (elementwise ops, comparisons, ``select``,
    casts), not constants. What a cost model counts as an operation."""


class ExactFold(OpTrait):
    """Folding the op on constant operands is exact and portable: its value is the reference
    interpreter's result, rounded once to the result type (integers wrap in two's complement;
    floats are correctly rounded by IEEE 754, or exact), the same on every machine. A folder may
    replace the op by that constant (unless it traps, or is a NaN). Transcendental functions
    (``math.exp``, ``tanh``, ...) do not have it: their last bit depends on the library."""


class Involution(OpTrait):
    """A unary op that undoes itself: ``op(op(x)) == x`` for every ``x`` (MLIR's ``Involution``;
    ``arith.negf``)."""


class Synchronization(OpTrait):
    """The op orders the memory accesses of threads (``gpu.barrier``): no access moves across it."""


class SubgroupCollective(OpTrait):
    """The 32 lanes of a warp execute the op together and may exchange data through it
    (``gpu.subgroup_mma_load_matrix/store_matrix/compute``, ``nvgpu.ldmatrix``, ``nvgpu.mma.sync``):
    every lane of the warp must reach it, so it may not be moved into control flow that only some
    lanes take (hoisting it out of such control flow is fine). The interpreter runs it once per
    warp with the operands of all 32 lanes."""


class WarpgroupCollective(OpTrait):
    """The 128 threads of a warpgroup (4 consecutive warps, linear thread id // 128) execute the op
    together (``nvgpu.warpgroup.mma/mma.store``, ``nvvm.wgmma.*``): every thread of the warpgroup must
    reach it, so it may not be moved into control flow that only some of them take. Not a kind of
    :class:`SubgroupCollective`: a pass that must keep warp-collective ops out of divergent control
    flow asks for both."""


class ViewLike(OpTrait):
    """The op's single result is a memref that views the memory of its first operand, its ``source``
    (MLIR's ``ViewLikeOpInterface``; ``memref.view``, ``memref.cast``): an access through the result
    is an access to the source's memory. Analyses that take distinct memref values not to alias must
    follow :func:`view_source` (or treat a view as an escape of its source)."""


class AffineMapValue(OpTrait):
    """The op's single ``index`` result is an affine map (attribute ``map``) of its ``index``
    operands: the map's one result, or the min or max of its results (``affine.apply/min/max``).
    Computed exactly from the operands alone, so where the operands are known (a GPU program's
    host, which computes grid sizes) the value is too."""


#: The old class booleans of ``Operation`` and the trait each one is a view of.
LEGACY_FLAGS = {"is_pure": Pure, "is_terminator": IsTerminator, "isolated_from_above": IsolatedFromAbove,
                "affine_scope": AffineScope}


class TraitFlag:
    """A read-only boolean class attribute that says whether the op (or op class) has ``trait``:
    the old ``Operation.is_pure`` & co."""

    __slots__ = ("trait",)

    def __init__(self, trait: type[OpTrait]):
        self.trait = trait

    def __get__(self, obj, owner=None) -> bool:
        return self.trait in (owner if owner is not None else type(obj)).trait_closure

    def __set__(self, obj, value) -> None:
        raise AttributeError(f"read-only: declare the {self.trait.__name__} trait on the op class instead")


def collect_traits(cls: type) -> frozenset[type[OpTrait]]:
    """The traits of op class ``cls``: those its bases have, united with those its body declares
    in ``traits``, and those an old boolean of :data:`LEGACY_FLAGS` set in its body adds (True)
    or removes (False); the old booleans are taken out of the body so the read-only views apply.
    TypeError for a declared trait that is not an :class:`OpTrait` subclass."""
    found: set[type[OpTrait]] = set()
    for base in cls.__bases__:
        found.update(getattr(base, "traits", ()))
    own = cls.__dict__.get("traits", ())
    for trait in own:
        if not (isinstance(trait, type) and issubclass(trait, OpTrait)):
            raise TypeError(f"{cls.__name__}.traits: {trait!r} is not an OpTrait subclass")
    found.update(own)
    for flag, trait in LEGACY_FLAGS.items():
        value = cls.__dict__.get(flag)
        if isinstance(value, bool):
            delattr(cls, flag)
            (found.add if value else found.discard)(trait)
    return frozenset(found)


def trait_closure(traits: frozenset[type[OpTrait]]) -> frozenset[type[OpTrait]]:
    """``traits`` with every trait they imply (their base traits): what ``has_trait`` looks up."""
    return frozenset(b for t in traits for b in t.__mro__ if issubclass(b, OpTrait) and b is not OpTrait)


class EffectKind(enum.Enum):
    """What a memory effect does to its value (MLIR's ``MemoryEffects::Effect`` kinds)."""

    READ = "read"
    WRITE = "write"
    ALLOCATE = "allocate"
    FREE = "free"


@dataclass(frozen=True)
class MemoryEffect:
    """One effect of an op: ``kind`` on ``value`` (the memref value affected; None when the
    memory is not known). Equal when the kind is equal and the value is the same object
    (values compare and hash by identity)."""

    kind: EffectKind
    value: Value | None = None


def nested_memory_effects(op: Operation) -> tuple[MemoryEffect, ...] | None:
    """The union of the memory effects of the ops in ``op``'s regions (each nested op's own
    ``memory_effects()``, in walk order, duplicates dropped); None when one of them is unknown."""
    out: dict[MemoryEffect, None] = {}
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                effects = inner.memory_effects()
                if effects is None:
                    return None
                out.update(dict.fromkeys(effects))
    return tuple(out)


def is_memory_effect_free(op: Operation) -> bool:
    """True when ``op``, with everything nested in it, reads, writes, allocates and frees no
    memory (MLIR's ``isMemoryEffectFree``); False for unknown effects."""
    return op.memory_effects() == ()


def has_only_read_effects(op: Operation) -> bool:
    """True when ``op`` (with everything nested in it) changes no memory and has no other
    effect: every effect reads memory or allocates the op's own result, and for a
    :class:`RecursiveMemoryEffects` op every nested op is so (a nested allocation of its own
    result included). Unknown effects (calls, barriers, GPU launches, unregistered ops) are not."""
    if op.has_trait(RecursiveMemoryEffects):
        return all(has_only_read_effects(inner) for region in op.regions for block in region.blocks
                   for inner in block.ops)
    effects = op.memory_effects()
    if effects is None:
        return False
    return all(e.kind is EffectKind.READ or (e.kind is EffectKind.ALLOCATE and _is_result_of(e.value, op))
               for e in effects)


def _is_result_of(value: Value | None, op: Operation) -> bool:
    return value is not None and any(value is r for r in op.results)


def would_be_trivially_dead(op: Operation) -> bool:
    """MLIR's ``wouldOpBeTriviallyDead``: ``op`` is not a terminator and has no effect but
    reading memory or allocating its result, so it could be erased if its results were unused."""
    return not op.has_trait(IsTerminator) and has_only_read_effects(op)


def is_trivially_dead(op: Operation) -> bool:
    """MLIR's ``isOpTriviallyDead``: no result of ``op`` is used and :func:`would_be_trivially_dead`.
    Erasing it changes nothing a program computes."""
    if op.has_trait(IsTerminator) or any(r.uses for r in op.results):
        return False
    return has_only_read_effects(op)


def written_values(op: Operation) -> tuple[Value, ...] | None:
    """The memrefs that ``op`` and the ops nested in it write or free (each once, in walk order);
    None when an effect is unknown or falls on memory that is not named."""
    return _values_with(op, (EffectKind.WRITE, EffectKind.FREE))


def read_values(op: Operation) -> tuple[Value, ...] | None:
    """The memrefs that ``op`` and the ops nested in it read (each once, in walk order); None when
    an effect is unknown or falls on memory that is not named."""
    return _values_with(op, (EffectKind.READ,))


def _values_with(op: Operation, kinds: tuple[EffectKind, ...]) -> tuple[Value, ...] | None:
    effects = op.memory_effects()
    if effects is None:
        return None
    out: dict[Value, None] = {}
    for e in effects:
        if e.kind in kinds:
            if e.value is None:
                return None
            out[e.value] = None
    return tuple(out)


def allocating_op(value: Value) -> Operation | None:
    """The op that allocates ``value`` (``memref.alloc``/``alloca``): its defining op when that op
    declares an ALLOCATE effect on it; None for a block argument or any other definition."""
    from .core import Operation

    owner = value.owner
    if not isinstance(owner, Operation):
        return None
    effects = owner.memory_effects() or ()
    return owner if any(e.kind is EffectKind.ALLOCATE and e.value is value for e in effects) else None


def only_frees_memory(op: Operation) -> bool:
    """Whether ``op`` has memory effects and every one frees memory (``memref.dealloc``)."""
    effects = op.memory_effects()
    return bool(effects) and all(e.kind is EffectKind.FREE for e in effects)


def only_allocates_results(op: Operation) -> bool:
    """Whether the only memory effects of ``op`` allocate its results (``memref.alloc/alloca``)."""
    return bool(op.results) and op.memory_effects() == tuple(MemoryEffect(EffectKind.ALLOCATE, r) for r in op.results)


def frees(op: Operation, value: Value) -> bool:
    """Whether ``op`` declares a FREE effect on ``value`` (``memref.dealloc``)."""
    return any(e.kind is EffectKind.FREE and e.value is value for e in op.memory_effects() or ())


def view_source(value: Value) -> Value:
    """The memref whose memory ``value`` views: through every :class:`ViewLike` op that defines it
    (``memref.view``, ``memref.cast``) back to the first value not defined by one (``value`` itself
    when it is no view). Two memref values may alias only if their view sources are the same value
    (or a function argument or a call result is involved)."""
    from .core import Operation

    while isinstance(value.owner, Operation) and value.owner.has_trait(ViewLike) and value.owner.operands:
        value = value.owner.operands[0]
    return value
