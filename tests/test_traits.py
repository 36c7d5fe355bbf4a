"""Op traits, memory effects and interfaces (affine_ir.traits, affine_ir.interfaces).

The oracles below restate, by class lists, what the passes assumed of each op before the traits
existed (the old class booleans, ``transforms/dce.py``'s side-effect table, LICM's and the
dependence analysis's classification); the traits and effects must give the same answers on
every op of a broad sample of programs, but for the differences listed in ``KNOWN_DIFFERENCES``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir import traits as T
from affine_ir.core import OP_REGISTRY, Operation
from affine_ir.dialects import arith, gpu, memref
from affine_ir.dialects import func as func_d
from affine_ir.dialects._simple import ConversionOp, ElementwiseOp
from affine_ir.dialects.affine import (
    AffineForOp,
    AffineIfOp,
    AffineLoadOp,
    AffineParallelOp,
    AffineStoreOp,
    AffineVectorLoadOp,
    AffineVectorStoreOp,
    AffineYieldOp,
)
from affine_ir.interfaces import (
    AffineAccessInterface,
    AffineReadOpInterface,
    AffineWriteOpInterface,
    LoopLikeOpInterface,
    MemRefAccessInterface,
)
from affine_ir.testing import EXAMPLES, LIBRARY_CASES, programs
from affine_ir.traits import EffectKind, MemoryEffect
from affine_ir.types import index
from transforms import PassManager
from transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE

# -- the old assumptions, restated -------------------------------------------------------------------

OLD_PURE_NAMES = {
    "arith.constant", "arith.cmpf", "arith.cmpi", "arith.select", "memref.dim", "affine.apply", "affine.min",
    "affine.max", "gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.subgroup_mma_compute",
    "gpu.subgroup_mma_constant_matrix", "vector.reduction",
    # added after the traits (issue 18), pure as in MLIR:
    "gpu.subgroup_mma_elementwise", "nvgpu.mma.sync", "vector.extract", "vector.insert", "vector.extract_strided_slice",
    # added with the Hopper ops (issue 19), pure as in MLIR (the views are also ViewLike):
    "memref.view", "memref.cast", "nvgpu.warpgroup.mma.init.accumulator",
    # the thread-block cluster ids (issue 19), pure as in MLIR:
    "gpu.cluster_id", "gpu.cluster_block_id",
}
OLD_PURE_BASES = (ElementwiseOp, ConversionOp)
OLD_TERMINATORS = {"func.return", "affine.yield", "gpu.terminator"}
OLD_ISOLATED = {"func.func", "builtin.module"}
OLD_AFFINE_SCOPES = {"func.func", "builtin.module", "gpu.launch"}
OLD_COMMUTATIVE = {
    "arith.addi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi", "arith.minsi",
    "arith.maxui", "arith.minui", "arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf",
}


def old_is_pure(cls: type) -> bool:
    return cls.name in OLD_PURE_NAMES or issubclass(cls, OLD_PURE_BASES)


def old_has_only_read_effects(op: Operation) -> bool:
    """transforms/dce.py before the traits."""
    if old_is_pure(type(op)) or isinstance(op, (AffineLoadOp, AffineVectorLoadOp, memref.LoadOp, memref.AllocOp,
                                                 memref.AllocaOp, AffineYieldOp)):
        return True
    if isinstance(op, (AffineForOp, AffineIfOp, AffineParallelOp)):
        return all(old_has_only_read_effects(i) for r in op.regions for b in r.blocks for i in b.ops)
    return False


def old_licm_kind(op: Operation) -> str:
    """transforms/licm.py's _LoopFacts before the traits: 'free' (pure, terminator, read), 'unknown',
    or 'writes' (every memref operand counts as written)."""
    if old_is_pure(type(op)) or op.name in OLD_TERMINATORS or \
            isinstance(op, (AffineLoadOp, AffineVectorLoadOp, memref.LoadOp)):
        return "free"
    if isinstance(op, (func_d.CallOp, air.UnregisteredOp, gpu.BarrierOp)) or \
            (op.regions and not isinstance(op, (AffineForOp, AffineIfOp, AffineYieldOp, AffineParallelOp))):
        return "unknown"
    return "writes"


#: Where the declared effects answer differently from the old tables, and why it changes no output.
KNOWN_DIFFERENCES = {
    # The old table did not know the fragment load: it now READs its memref, as in MLIR (no pass
    # creates these ops yet).
    "gpu.subgroup_mma_load_matrix",
    # Terminators have no memory effect (MLIR: Pure); the old table said "has effects" for them, but
    # every caller asks is_trivially_dead, which excludes terminators, or recurses into affine ops,
    # whose only terminator is affine.yield.
    "func.return", "gpu.terminator",
    # A warp exchange: LICM saw it as harmless (no memref operand); it declares no effects, so it is
    # unknown now (DCE and CSE keep treating it as before: it is neither pure nor erasable).
    "gpu.shuffle",
    # Ops added after the traits (issue 18), never in the old tables: the element-wise op on warp
    # matrices and nvgpu.mma.sync are Pure as in MLIR; the other nvgpu ops declare their effects.
    "gpu.subgroup_mma_elementwise", "nvgpu.ldmatrix", "nvgpu.mma.sync", "nvgpu.device_async_copy",
    "nvgpu.device_async_create_group", "nvgpu.device_async_wait", "vector.extract", "vector.insert",
}

SNIPPET = """\
func.func private @ext(memref<8xf32>)
func.func @misc(%A: memref<8xf32>, %B: memref<?xf32>, %n: index, %H: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %d = memref.dim %B, %c0 : memref<?xf32>
  %t = memref.alloca() : memref<8xf32>
  %u = memref.alloc(%d) : memref<?xf32>
  %x = memref.load %A[%c0] : memref<8xf32>
  memref.store %x, %t[%c0] : memref<8xf32>
  %q = arith.divsi %n, %c32 : index
  %r = affine.parallel (%i) = (0) to (8) reduce ("addf") -> (f32) {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.yield %v : f32
  }
  affine.for %i = 0 to 8 step 2 {
    affine.if affine_set<(d0) : (d0 - 4 >= 0)>(%i) {
      %w = affine.vector_load %A[%i] : memref<8xf32>, vector<2xf32>
      affine.vector_store %w, %t[%i] : memref<8xf32>, vector<2xf32>
    }
  }
  "test.opaque"(%A) : (memref<8xf32>) -> ()
  func.call @ext(%t) : (memref<8xf32>) -> ()
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %zero = arith.constant 0.000000e+00 : f32
    %a = gpu.subgroup_mma_load_matrix %H[%bx, %by] leadDimension 64
           : memref<64x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %c = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %c, %C[%bx, %by] leadDimension 64
        : !gpu.mma_matrix<16x16xf32, "COp">, memref<64x64xf32>
    gpu.barrier
    %off = arith.constant 1 : i32
    %wd = arith.constant 32 : i32
    %sh, %valid = gpu.shuffle xor %zero, %off, %wd : f32
    %tid = gpu.thread_id x
    gpu.terminator
  }
  memref.dealloc %u : memref<?xf32>
  return
}
"""


def _sample_modules() -> list:
    mods = [air.parse(SNIPPET, allow_unregistered=True)]
    mods += [air.parse(text) for text in EXAMPLES.values()]
    for build in LIBRARY_CASES.values():
        mods.append(build())
    for name in ("softmax", "matmul", "layernorm"):
        mods.append(PassManager.parse(GPU_PIPELINE).run(LIBRARY_CASES[name]()))
        mods.append(PassManager.parse(CPU_PIPELINE).run(LIBRARY_CASES[name]()))
    return mods


@pytest.fixture(scope="module")
def sample_ops() -> list[Operation]:
    return [op for m in _sample_modules() for op in m.walk()]


# -- traits of every registered class ----------------------------------------------------------------

#: The ops of the dialects (other test modules define and register op classes of their own).


#: The ops of the dialects (not the test ops other test modules register when they are imported).
DIALECT_OPS = sorted(name for name, cls in OP_REGISTRY.items() if cls.__module__.startswith("affine_ir."))


@pytest.mark.parametrize("name", DIALECT_OPS)
def test_old_booleans_are_the_traits(name):
    cls = OP_REGISTRY[name]
    assert cls.is_pure == old_is_pure(cls) == cls.has_trait(T.Pure)
    assert cls.is_terminator == (name in OLD_TERMINATORS) == cls.has_trait(T.IsTerminator)
    assert cls.isolated_from_above == (name in OLD_ISOLATED) == cls.has_trait(T.IsolatedFromAbove)
    assert cls.affine_scope == (name in OLD_AFFINE_SCOPES) == cls.has_trait(T.AffineScope)
    assert cls.has_trait(T.Commutative) == (name in OLD_COMMUTATIVE)
    assert cls.has_trait(T.KernelScope) == (name == "gpu.launch")  # CSE's SCOPE_BARRIERS
    assert cls.has_trait(T.ConstantLike) == (name == "arith.constant")
    assert cls.has_trait(T.Synchronization) == (name in ("gpu.barrier", "nvvm.barrier", "nvvm.cluster.arrive",
                                                         "nvvm.cluster.wait"))
    assert cls.has_trait(T.AffineMapValue) == (name in ("affine.apply", "affine.min", "affine.max"))  # HOST_MAPS
    assert cls.has_trait(T.RecursiveMemoryEffects) == (name in ("affine.for", "affine.if", "affine.parallel"))
    assert cls.has_trait(T.SameOperandsAndResultType) == issubclass(cls, ElementwiseOp)
    assert all(issubclass(t, T.OpTrait) for t in cls.traits)


def test_affine_map_values_are_their_map_of_index_operands():
    """What AffineMapValue promises: one index result, an affine map of as many index operands,
    and no memory effect."""
    m = air.parse("""func.func @f(%n: index, %A: memref<?xf32>) {
  %a = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%n)[%n]
  %b = affine.min affine_map<(d0)[s0] -> (d0 * 2, s0 - 1)>(%a)[%n]
  %c = affine.max affine_map<()[s0] -> (s0, 4)>()[%b]
  %d = arith.addi %c, %n : index
  return
}""")
    ops = [op for op in m.walk() if op.has_trait(T.AffineMapValue)]
    assert [op.name for op in ops] == ["affine.apply", "affine.min", "affine.max"]
    for op in ops:
        m = op.attributes["map"]
        assert isinstance(m, air.AffineMap) and m.num_inputs == len(op.operands)
        assert [r.type for r in op.results] == [index] and all(v.type == index for v in op.operands)
        assert op.is_pure


def test_commutative_table_is_a_view_of_the_trait():
    assert arith.COMMUTATIVE == OLD_COMMUTATIVE


def test_trait_booleans_are_read_only():
    op = arith.ConstantOp.of(1, air.types.index)
    with pytest.raises(AttributeError):
        op.is_pure = False
    assert op.is_pure and op.has_trait(T.NoMemoryEffect) and op.has_trait(T.AlwaysSpeculatable)


def test_traits_are_classes_not_instances():
    with pytest.raises(TypeError):
        T.Pure()
    with pytest.raises(TypeError):
        type("BadOp", (Operation,), {"traits": frozenset({"Pure"})})


# -- effects on ops of real programs -------------------------------------------------------------------

def _differs_knowingly(op: Operation) -> bool:
    return op.name in KNOWN_DIFFERENCES


def test_sample_covers_every_kind_of_effect(sample_ops):
    names = {op.name for op in sample_ops}
    for want in ("func.call", "gpu.barrier", "gpu.launch", "memref.dealloc", "memref.alloca", "memref.alloc",
                 "affine.parallel", "affine.if", "affine.vector_store", "memref.store", "gpu.shuffle", "test.opaque",
                 "gpu.subgroup_mma_load_matrix", "gpu.subgroup_mma_store_matrix", "arith.divsi", "memref.dim"):
        assert want in names


def test_read_only_effects_agree_with_the_old_dce_table(sample_ops):
    checked = 0
    for op in sample_ops:
        if not _differs_knowingly(op) and not any(_differs_knowingly(i) for i in op.walk()):
            assert T.has_only_read_effects(op) == old_has_only_read_effects(op), op.name
            checked += 1
        if op.name not in ("gpu.subgroup_mma_load_matrix",):  # terminators are never trivially dead
            old_dead = op.name not in OLD_TERMINATORS and not any(r.uses for r in op.results) and \
                old_has_only_read_effects(op)
            assert T.is_trivially_dead(op) == old_dead, op.name
    assert checked > 1000


def test_the_known_differences_are_the_ones_stated():
    m = air.parse(SNIPPET, allow_unregistered=True)
    by_name = {op.name: op for op in m.walk()}
    for name in ("gpu.subgroup_mma_load_matrix", "func.return", "gpu.terminator"):
        assert T.has_only_read_effects(by_name[name]) and not old_has_only_read_effects(by_name[name])
    assert by_name["gpu.shuffle"].memory_effects() is None and old_licm_kind(by_name["gpu.shuffle"]) == "writes"


def test_effects_agree_with_what_licm_assumed(sample_ops):
    for op in sample_ops:
        if _differs_knowingly(op) or isinstance(op, (AffineForOp, AffineIfOp, AffineParallelOp, func_d.FuncOp,
                                                     air.ModuleOp)):
            continue  # loops are walked into; functions and modules are never in a loop
        kind = old_licm_kind(op)
        written = T.written_values(op)
        if kind == "unknown":
            assert op.memory_effects() is None, op.name
        elif kind == "free":
            assert written == (), op.name
        else:
            mems = {v for v in op.operands if isinstance(v.type, air.types.MemRefType)}
            assert written is not None and set(written) == mems, op.name


def test_structured_ops_unite_their_bodies_effects(sample_ops):
    for op in sample_ops:
        if op.has_trait(T.RecursiveMemoryEffects):
            inner = [i.memory_effects() for i in op.walk() if i is not op and not i.regions]
            effects = op.memory_effects()
            if any(e is None for e in inner):
                assert effects is None
            else:
                assert set(effects) == {e for es in inner for e in es}
                assert T.is_memory_effect_free(op) == (not effects)


def test_accesses_declare_their_memref(sample_ops):
    for op in sample_ops:
        if isinstance(op, MemRefAccessInterface):
            kind = EffectKind.WRITE if op.is_write else EffectKind.READ
            assert op.memory_effects() == (MemoryEffect(kind, op.memref),)
            assert (T.read_values(op), T.written_values(op)) == (((), (op.memref,)) if op.is_write else
                                                                  ((op.memref,), ()))
            assert op.is_write == isinstance(op, (AffineStoreOp, AffineVectorStoreOp, memref.StoreOp))
            assert op.value_to_store is (op.operands[0] if op.is_write else None)


def test_speculation_follows_pure_but_for_divisions(sample_ops):
    divisions = {f"arith.{k}" for k in ("divsi", "divui", "remsi", "remui", "ceildivsi")}
    for op in sample_ops:
        if op.name not in divisions:
            assert op.is_speculatable() == old_is_pure(type(op)), op.name
    n = air.parse(SNIPPET, allow_unregistered=True)
    div = next(op for op in n.walk() if op.name == "arith.divsi")
    assert div.is_pure and div.is_speculatable()  # by the constant 32


def test_allocation_and_free_effects():
    m = air.parse(SNIPPET, allow_unregistered=True)
    ops = {op.name: op for op in m.walk()}
    alloc, dealloc = ops["memref.alloc"], ops["memref.dealloc"]
    assert alloc.memory_effects() == (MemoryEffect(EffectKind.ALLOCATE, alloc.result),)
    assert dealloc.memory_effects() == (MemoryEffect(EffectKind.FREE, alloc.result),)
    assert T.written_values(dealloc) == (alloc.result,) and T.read_values(alloc) == ()
    assert T.would_be_trivially_dead(alloc) and not T.would_be_trivially_dead(dealloc)
    for name in ("func.call", "gpu.barrier", "gpu.launch", "test.opaque", "func.func"):
        assert ops[name].memory_effects() is None
        assert T.written_values(ops[name]) is None and T.read_values(ops[name]) is None


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs_agree_with_the_old_dce_table(module):
    for op in module.walk():
        assert T.has_only_read_effects(op) == old_has_only_read_effects(op) or _differs_knowingly(op)


# -- ops declared in a test, with traits only ----------------------------------------------------------

class _PureCommutativeOp(Operation):
    name = "test.pure_commutative"
    traits = frozenset({T.Pure, T.Commutative})


class _ReadsOperandOp(Operation):
    name = "test.reads_operand"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.READ, self.operands[0]),)


class _DerivedPureOp(_PureCommutativeOp):
    name = "test.derived"
    traits = frozenset({T.SameOperandsAndResultType})


@pytest.fixture
def new_ops():
    f32, mem = air.types.f32, air.types.MemRefType((8,), air.types.f32)
    block = air.Block([f32, f32, mem])
    a, b, m = block.args
    yield block, _PureCommutativeOp([a, b], [f32]), _ReadsOperandOp([m], [f32])
    for name in ("test.pure_commutative", "test.reads_operand", "test.derived"):
        OP_REGISTRY.pop(name, None)


def test_a_new_op_with_traits_answers_the_queries(new_ops):
    block, pure, reads = new_ops
    assert _PureCommutativeOp.has_trait(T.Pure) and pure.has_trait(T.Commutative) and pure.is_pure
    assert pure.memory_effects() == () and T.is_memory_effect_free(pure) and pure.is_speculatable()
    assert T.is_trivially_dead(pure)
    assert not reads.is_pure and not reads.is_speculatable() and not T.is_memory_effect_free(reads)
    assert T.has_only_read_effects(reads) and T.is_trivially_dead(reads)
    assert T.read_values(reads) == (block.args[2],) and T.written_values(reads) == ()
    assert _DerivedPureOp.traits == {T.Pure, T.Commutative, T.SameOperandsAndResultType}


def test_a_class_body_boolean_still_declares_the_trait():
    cls = type("LegacyOp", (Operation,), {"is_pure": True, "is_terminator": True})
    assert cls.has_trait(T.Pure) and cls.has_trait(T.IsTerminator) and cls.is_pure and cls.is_terminator
    sub = type("LegacySub", (cls,), {"is_pure": False})
    assert not sub.is_pure and sub.is_terminator


# -- interfaces ---------------------------------------------------------------------------------------------

def test_affine_accesses_answer_the_access_interface(sample_ops):
    seen = set()
    for op in sample_ops:
        if isinstance(op, (AffineLoadOp, AffineVectorLoadOp, AffineStoreOp, AffineVectorStoreOp)):
            seen.add(op.name)
            assert isinstance(op, AffineAccessInterface)
            write = isinstance(op, (AffineStoreOp, AffineVectorStoreOp))
            assert isinstance(op, AffineWriteOpInterface) == write != isinstance(op, AffineReadOpInterface)
            assert op.map is op.attributes["map"] and op.map.num_results == op.memref.type.rank
            assert op.map_operands == op.operands[2 if write else 1:] == op.indices
            assert op.memref is op.operands[1 if write else 0]
            vector = isinstance(op, (AffineVectorLoadOp, AffineVectorStoreOp))
            want = (op.operands[0].type if write else op.result.type) if vector else None
            assert op.vector_type == want
    assert seen == {"affine.load", "affine.store", "affine.vector_load", "affine.vector_store"}


def test_set_access_replaces_map_and_operands():
    m = air.parse(EXAMPLES["stencil"])
    store = next(op for op in m.walk() if isinstance(op, AffineStoreOp))
    value, mem, ivs = store.value_to_store, store.memref, store.map_operands
    shifted = air.AffineMap(store.map.num_dims, store.map.num_symbols, tuple(e + 1 for e in store.map.results))
    store.set_access(shifted, ivs)
    assert store.map == shifted and store.map_operands == ivs
    assert store.value_to_store is value and store.memref is mem


def test_loops_answer_the_loop_like_interface(sample_ops):
    kinds = set()
    for op in sample_ops:
        if isinstance(op, AffineForOp):
            kinds.add(op.name)
            assert isinstance(op, LoopLikeOpInterface)
            assert op.induction_vars == (op.induction_var,) and op.steps == (op.step,)
            assert op.region_iter_args == tuple(op.iter_args) and op.inits == op.operands[len(op.operands) -
                                                                                        len(op.results):]
            assert op.lower_bounds == ((op.lower_bound_map, op.lower_bound_operands),)
            assert op.upper_bounds == ((op.upper_bound_map, op.upper_bound_operands),)
            assert op.loop_results == tuple(op.results) and op.body is op.regions[0].blocks[0]
        elif isinstance(op, AffineParallelOp):
            kinds.add(op.name)
            assert isinstance(op, LoopLikeOpInterface)
            assert op.induction_vars == tuple(op.ivs) and op.region_iter_args == () and op.inits == ()
            assert len(op.lower_bounds) == len(op.upper_bounds) == len(op.steps) == len(op.ivs)
            for (lm, lops), (um, uops), lo, hi in zip(op.lower_bounds, op.upper_bounds, op.bound_groups(False),
                                                      op.bound_groups(True)):
                assert list(lm.results) == lo and list(um.results) == hi
                assert lops == op.lower_operands and uops == op.upper_operands
        else:
            assert not isinstance(op, LoopLikeOpInterface)
    assert kinds == {"affine.for", "affine.parallel"}


def test_memref_accesses_answer_the_memref_interface():
    m = air.parse(SNIPPET, allow_unregistered=True)
    load = next(op for op in m.walk() if isinstance(op, memref.LoadOp))
    store = next(op for op in m.walk() if isinstance(op, memref.StoreOp))
    assert not isinstance(load, AffineAccessInterface) and isinstance(load, MemRefAccessInterface)
    assert load.value_to_store is None and load.vector_type is None and load.indices == load.operands[1:]
    assert store.is_write and store.value_to_store is load.result and store.memref is store.operands[1]


# -- Arithmetic, allocating_op, frees -------------------------------------------------------------------------------

def test_arithmetic_is_the_arith_and_math_computations():
    """The cost model counted ``arith.*`` and ``math.*`` ops but constants by name; the trait says it now."""
    declared = {name for name in DIALECT_OPS if OP_REGISTRY[name].has_trait(T.Arithmetic)}
    by_name = {name for name in DIALECT_OPS if name.split(".")[0] in ("arith", "math") and name != "arith.constant"}
    assert declared == by_name and "arith.select" in declared and "arith.cmpf" in declared
    assert not OP_REGISTRY["vector.broadcast"].has_trait(T.Arithmetic)


def test_allocating_op_and_frees_read_the_declared_effects(sample_ops):
    allocated = [r for op in sample_ops for r in op.results if T.allocating_op(r) is not None]
    assert {T.allocating_op(r).name for r in allocated} == {"memref.alloc", "memref.alloca"}
    assert all(isinstance(r.owner, (memref.AllocOp, memref.AllocaOp)) for r in allocated)
    args = [a for op in sample_ops if isinstance(op, func_d.FuncOp) and not op.is_declaration for a in op.body.args]
    assert args and all(T.allocating_op(a) is None for a in args)
    for op in sample_ops:
        for v in op.operands:
            assert T.frees(op, v) == isinstance(op, memref.DeallocOp)


@pytest.mark.parametrize("short", arith.INT_BINARY)
def test_traps_on_zero_divisor_is_declared_by_exactly_the_ops_that_trap(short):
    m = air.parse(f"func.func @f(%a: i32, %b: i32) -> i32 {{\n  %r = arith.{short} %a, %b : i32\n"
                  f"  return %r : i32\n}}")
    try:
        air.interpret(m, 7, 0)
        traps = False
    except air.InterpretError:
        traps = True
    assert getattr(arith.OPS[short], "traps_on_zero_divisor", False) == traps


# -- folding facts: ExactFold, Involution, the binary ops' algebraic facts ------------------------------------------

#: The functions whose last bit depends on the math library: not folded (canonicalize's old table left them out).
LIBRARY_DEPENDENT = {"math.exp", "math.exp2", "math.log", "math.log2", "math.tanh", "math.rsqrt", "math.erf",
                     "math.sin", "math.cos", "math.powf"}


def test_exact_fold_is_every_arithmetic_op_but_the_library_dependent_functions():
    declared = {name for name in DIALECT_OPS if OP_REGISTRY[name].has_trait(T.ExactFold)}
    arithmetic = {name for name in DIALECT_OPS if OP_REGISTRY[name].has_trait(T.Arithmetic)}
    assert declared == arithmetic - LIBRARY_DEPENDENT
    assert "math.sqrt" in declared and "arith.select" in declared and "arith.constant" not in declared


def test_involution_is_negf_only():
    assert {name for name in DIALECT_OPS if OP_REGISTRY[name].has_trait(T.Involution)} == {"arith.negf"}


def _interpret_binary(name: str, type_: str, x, rhs: str | None):
    """``x <name> rhs`` (a constant) or, with ``rhs`` None, ``x <name> x``, by the interpreter."""
    second = "%x" if rhs is None else "%c"
    text = f"""func.func @f(%x: {type_}) -> {type_} {{
  %c = arith.constant {rhs if rhs is not None else 0} : {type_}
  %r = {name} %x, {second} : {type_}
  return %r : {type_}
}}"""
    return air.interpret(air.parse(text), x)


INT_SAMPLES = (-7, -1, 0, 1, 5, 2**31 - 1)
FLOAT_SAMPLES = (-2.5, -0.0, 0.0, 1.0, 3.25)


def _same(a, b) -> bool:
    import math

    a, b = float(a), float(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize("name", sorted(n for n, c in OP_REGISTRY.items() if n.startswith("arith.")
                                        and issubclass(c, ElementwiseOp) and c.arity == 2))
def test_declared_algebraic_facts_hold_in_the_interpreter(name):
    """What the folders rely on (``right_identity``, ``zero_when_rhs_is``, ``idempotent``,
    ``cancels_itself``) is checked against the reference semantics on sample values."""
    import numpy as np

    cls = OP_REGISTRY[name]
    is_float = cls.operand_kind == "float"
    type_, samples = ("f32", FLOAT_SAMPLES) if is_float else ("i32", INT_SAMPLES)
    box = np.float32 if is_float else np.int32
    facts = 0
    for x in samples:
        if cls.right_identity is not None:
            assert _same(_interpret_binary(name, type_, box(x), repr(cls.right_identity)), x)
            facts += 1
        if cls.zero_when_rhs_is is not None:
            assert _interpret_binary(name, type_, box(x), str(cls.zero_when_rhs_is)) == 0
        if cls.idempotent:
            assert _same(_interpret_binary(name, type_, box(x), None), x)
        if cls.cancels_itself:
            assert _interpret_binary(name, type_, box(x), None) == 0
    assert facts or cls.right_identity is None
