"""The ``gpu`` dialect subset: kernel launch, ids, barriers, shuffles and warp-level MMA."""

from __future__ import annotations

from collections.abc import Sequence

from ..attributes import IntegerAttr, UnitAttr
from ..core import Block, Operation, Region, Value
from ..traits import (
    AffineScope,
    EffectKind,
    IsTerminator,
    KernelScope,
    MemoryEffect,
    NoMemoryEffect,
    Pure,
    SubgroupCollective,
    Synchronization,
)
from ..types import FloatType, IntegerType, MemRefType, MMAMatrixType, Type, i1, i32, index
from ._simple import build_from_operands, set_regions

DIMS = ("x", "y", "z")


class LaunchOp(Operation):
    """``gpu.launch [clusters(%cx, %cy, %cz) in (%ncx = %c, ...)] blocks(%bx, %by, %bz) in (%gx = %a, ...)
    threads(%tx, ...) in (%sx = %b, ...) [dynamic_shared_memory_size %s] { ... }``.

    Operands: three grid sizes (blocks), three block sizes, optionally three cluster sizes (blocks per
    thread-block cluster, as upstream), then optionally the dynamic shared memory size (i32). The body's
    arguments are block ids, thread ids, grid sizes, block sizes (12), then with clusters the cluster ids and
    cluster sizes (18, upstream's order). Clusters are read, printed and verified; the interpreter and the
    CUDA printer refuse them (not supported yet)."""

    name = "gpu.launch"
    # Its effects are unknown (None): a kernel runs on the device, and passes leave it whole.
    traits = frozenset({AffineScope, KernelScope})

    def __init__(self, grid: Sequence[Value], block: Sequence[Value], dynamic_shared_memory: Value | None = None,
                 location=None, clusters: Sequence[Value] = ()):
        names = ["bx", "by", "bz", "tx", "ty", "tz", "gx", "gy", "gz", "sx", "sy", "sz"]
        names += ["cx", "cy", "cz", "ncx", "ncy", "ncz"] if clusters else []
        body = Block([index] * len(names), names)
        ops = [*grid, *block, *clusters] + ([dynamic_shared_memory] if dynamic_shared_memory is not None else [])
        super().__init__(ops, [], None, [Region([body])], location)

    @property
    def block_ids(self) -> list[Value]:
        return self.body.args[0:3]

    @property
    def thread_ids(self) -> list[Value]:
        return self.body.args[3:6]

    @property
    def grid_size(self) -> tuple[Value, ...]:
        return self.operands[0:3]

    @property
    def block_size(self) -> tuple[Value, ...]:
        return self.operands[3:6]

    @property
    def cluster_size(self) -> tuple[Value, ...]:
        """The three cluster sizes (blocks per cluster), or () without clusters."""
        return tuple(self.operands[6:9]) if len(self.operands) in (9, 10) else ()

    @property
    def dynamic_shared_memory(self) -> Value | None:
        return self.operands[-1] if len(self.operands) in (7, 10) else None

    def print_(self, p) -> None:
        a = self.body.args
        parts = [("clusters", a[12:15], a[15:18], self.cluster_size)] if self.cluster_size else []
        parts += [("blocks", a[0:3], a[6:9], self.grid_size), ("threads", a[3:6], a[9:12], self.block_size)]
        p.write("gpu.launch")
        for kw, ids, sizes, ops in parts:
            ids_s = ", ".join(p.name_value(v) for v in ids)
            sz = ", ".join(f"{p.name_value(s)} = {p.value(o)}" for s, o in zip(sizes, ops))
            p.write(f" {kw}({ids_s}) in ({sz})")
        if self.dynamic_shared_memory is not None:
            p.write(f" dynamic_shared_memory_size {p.value(self.dynamic_shared_memory)}")
        p.write(" ")
        p.region(self.regions[0])
        p.write(p.attr_dict(self))

    @classmethod
    def parse_(cls, p, loc):
        ids, sizes, ops = [], [], []
        clusters = p.accept("clusters")
        for kw in ("clusters", "blocks", "threads")[0 if clusters else 1:]:
            if kw != "clusters":
                p.expect(kw)
            p.expect("(")
            ids += [p.parse_value_name() for _ in range(1)]
            for _ in range(2):
                p.expect(",")
                ids.append(p.parse_value_name())
            p.expect(")")
            p.expect("in")
            p.expect("(")
            for k in range(3):
                if k:
                    p.expect(",")
                sizes.append(p.parse_value_name())
                p.expect("=")
                ops.append(p.parse_operand(index))
            p.expect(")")
        dyn = p.parse_operand(i32) if p.accept("dynamic_shared_memory_size") else None
        c = 3 if clusters else 0  # parsed in text order: clusters, blocks, threads
        names = ids[c:c + 3] + ids[c + 3:c + 6] + sizes[c:c + 3] + sizes[c + 3:c + 6]
        names += ids[0:3] + sizes[0:3] if clusters else []
        region = p.parse_region([(t, index) for t in names])
        op = cls(ops[c:c + 3], ops[c + 3:c + 6], dyn, location=loc, clusters=ops[0:3] if clusters else ())
        return p.add_attributes(set_regions(op, region), p.parse_optional_attr_dict())

    def verify_(self) -> None:
        sizes = 9 if self.cluster_size else 6
        if len(self.operands) not in (6, 7, 9, 10) or any(v.type != index for v in self.operands[:sizes]):
            raise self.error("needs three grid and three block sizes (and three cluster sizes) of index type")
        if self.dynamic_shared_memory is not None and self.dynamic_shared_memory.type != i32:
            raise self.error(f"the dynamic shared memory size must be i32, got {self.dynamic_shared_memory.type}")
        want = 18 if self.cluster_size else 12
        if len(self.body.args) != want or any(a.type != index for a in self.body.args):
            raise self.error(f"body must take {want} index arguments")
        if not self.body.ops or not isinstance(self.body.ops[-1], TerminatorOp):
            raise self.error("body must end with 'gpu.terminator'")


class _BareOp(Operation):
    """``gpu.barrier {attrs}``: an op that is just its name (and attributes)."""

    from_generic = classmethod(build_from_operands)

    def print_(self, p) -> None:
        p.write(self.name + p.attr_dict(self))

    @classmethod
    def parse_(cls, p, loc):
        return p.add_attributes(cls(location=loc), p.parse_optional_attr_dict())


class TerminatorOp(_BareOp):
    """``gpu.terminator``: ends a gpu.launch body."""

    name = "gpu.terminator"
    traits = frozenset({IsTerminator, NoMemoryEffect})

    def verify_(self) -> None:
        if not isinstance(self.parent_op, LaunchOp):
            raise self.error("must terminate a 'gpu.launch' body")


class BarrierOp(_BareOp):
    """``gpu.barrier``: all threads of the block wait here (``__syncthreads()``)."""

    name = "gpu.barrier"
    traits = frozenset({Synchronization})  # effects unknown (None): nothing moves across it


class _IdOp(Operation):
    """``%t = gpu.thread_id x``."""

    traits = frozenset({Pure})

    def __init__(self, dimension: str, location=None, name_hint=None):
        super().__init__([], [index], {"dimension": dimension}, location=location, result_names=[name_hint])

    @property
    def dimension(self) -> str:
        return self.attributes["dimension"]

    def print_(self, p) -> None:
        bound = self.attributes.get("upper_bound")
        text = f" upper_bound {bound.value}" if isinstance(bound, IntegerAttr) else ""
        p.write(f"{self.name} {self.dimension}{text}{p.attr_dict(self, ('dimension', 'upper_bound'))}")

    @classmethod
    def parse_(cls, p, loc):
        """``gpu.thread_id x [upper_bound 128] {attrs}``."""
        op = cls(p.parse_keyword(DIMS), location=loc)
        if p.accept("upper_bound"):
            op.attributes["upper_bound"] = IntegerAttr(p.parse_integer("upper bound"), index)
        return p.add_attributes(op, p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if self.dimension not in DIMS:
            raise self.error(f"dimension must be x, y or z, got {self.dimension!r}")


class ThreadIdOp(_IdOp):
    name = "gpu.thread_id"


class BlockIdOp(_IdOp):
    name = "gpu.block_id"


class BlockDimOp(_IdOp):
    name = "gpu.block_dim"


class GridDimOp(_IdOp):
    name = "gpu.grid_dim"


class ClusterIdOp(_IdOp):
    """``gpu.cluster_id x``: the thread-block cluster's index in the grid (upstream's; not run or printed to CUDA
    yet)."""

    name = "gpu.cluster_id"


class ClusterBlockIdOp(_IdOp):
    """``gpu.cluster_block_id x``: the block's index within its cluster (upstream's; not run or printed to CUDA
    yet)."""

    name = "gpu.cluster_block_id"


SHUFFLE_MODES = ("xor", "up", "down", "idx")


class ShuffleOp(Operation):
    """``%r, %valid = gpu.shuffle xor %v, %offset, %width : f32``."""

    name = "gpu.shuffle"
    # No traits: an exchange between the lanes of a warp, never merged, erased or moved; its
    # effects are unknown (None).

    def __init__(self, mode: str, value: Value, offset: Value, width: Value, location=None):
        super().__init__([value, offset, width], [value.type, i1], {"mode": mode}, location=location)

    def print_(self, p) -> None:
        p.write(f"gpu.shuffle {self.attributes['mode']} {p.values(self.operands)}{p.attr_dict(self, ('mode',))} : "
                f"{self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        mode = p.parse_keyword(SHUFFLE_MODES)
        v = p.parse_operand()
        p.expect(",")
        off = p.parse_operand(i32)
        p.expect(",")
        width = p.parse_operand(i32)
        attrs, _, _ = p.parse_attrs_and_type(v)
        return p.add_attributes(cls(mode, v, off, width, location=loc), attrs)


class SubgroupMmaLoadMatrixOp(Operation):
    """Loads a warp-level matrix fragment:

    ``%a = gpu.subgroup_mma_load_matrix %A[%i, %j] leadDimension 32 : memref<..> -> !gpu.mma_matrix<..>``

    (the older ``{leadDimension = 32 : index}`` form is accepted too; an optional
    ``transpose`` keyword follows the lead dimension).
    """

    name = "gpu.subgroup_mma_load_matrix"
    traits = frozenset({SubgroupCollective})

    def __init__(self, memref: Value, indices: Sequence[Value], lead_dimension: int, result_type: MMAMatrixType,
                 location=None):
        super().__init__([memref, *indices], [result_type], {"leadDimension": IntegerAttr(lead_dimension, index)},
                         location=location)

    def print_(self, p) -> None:
        m, *idx = self.operands
        p.write(f"gpu.subgroup_mma_load_matrix {p.value(m)}[{p.values(idx)}]{_print_lead_dim(p, self)} : {m.type} -> "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        m, idx = p.parse_indexed_operand()
        lead_dim, attrs = _parse_lead_dim(p)
        tloc = p.loc()
        p.check_type(m, p.parse_colon_type(), tloc)
        p.expect("->")
        rloc = p.loc()
        rt = p.parse_type()
        if not isinstance(rt, MMAMatrixType):
            raise p.error(f"expected !gpu.mma_matrix result type, found {rt}", rloc)
        return p.add_attributes(cls(m, idx, lead_dim, rt, location=loc), attrs)

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ of the memref."""
        return (MemoryEffect(EffectKind.READ, self.operands[0]),)

    def verify_(self) -> None:
        _verify_mma_memref(self, self.operands[0], self.operands[1:], self.result.type)


class SubgroupMmaStoreMatrixOp(Operation):
    """Stores a warp-level matrix fragment (an accumulator, ``"COp"``).

    ``gpu.subgroup_mma_store_matrix %c, %C[%i, %j] leadDimension 32 : !gpu.mma_matrix<..>, memref<..>``
    """

    name = "gpu.subgroup_mma_store_matrix"
    traits = frozenset({SubgroupCollective})

    def __init__(self, value: Value, memref: Value, indices: Sequence[Value], lead_dimension: int, location=None):
        super().__init__([value, memref, *indices], [], {"leadDimension": IntegerAttr(lead_dimension, index)},
                         location=location)

    def print_(self, p) -> None:
        v, m, *idx = self.operands
        p.write(f"gpu.subgroup_mma_store_matrix {p.value(v)}, {p.value(m)}[{p.values(idx)}]"
                f"{_print_lead_dim(p, self)} : {v.type}, {m.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        p.expect(",")
        m, idx = p.parse_indexed_operand()
        lead_dim, attrs = _parse_lead_dim(p)
        tloc = p.loc()
        p.check_type(v, p.parse_colon_type(), tloc)
        p.expect(",")
        p.check_type(m, p.parse_type(), tloc)
        return p.add_attributes(cls(v, m, idx, lead_dim, location=loc), attrs)

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """WRITE of the memref."""
        return (MemoryEffect(EffectKind.WRITE, self.operands[1]),)

    def verify_(self) -> None:
        _verify_mma_memref(self, self.operands[1], self.operands[2:], self.operands[0].type)
        if self.operands[0].type.operand != "COp":
            raise self.error("expects the stored matrix to be a \"COp\" (accumulator) fragment")


def _print_lead_dim(p, op: Operation) -> str:
    ld = op.attributes["leadDimension"]
    text = f" leadDimension {ld.value if isinstance(ld, IntegerAttr) else ld}"
    if "transpose" in op.attributes:
        text += " transpose"
    return text + p.attr_dict(op, ("leadDimension", "transpose"))


def _parse_lead_dim(p) -> tuple[int, dict]:
    """``leadDimension 32 [transpose] {attrs}`` or the older ``{leadDimension = 32 : index}``.

    Returns the lead dimension and the other attributes (``transpose`` included).
    """
    lead_dim, transpose = None, False
    if p.accept("leadDimension"):
        lead_dim = p.parse_integer("lead dimension")
        transpose = p.accept("transpose")
    attrs = p.parse_optional_attr_dict()
    if lead_dim is None:
        ld = attrs.pop("leadDimension", None)
        if not isinstance(ld, IntegerAttr):
            raise p.error("expected 'leadDimension' and an integer", attrs.loc)
        lead_dim = ld.value
    if transpose:
        attrs["transpose"] = UnitAttr()
    return lead_dim, attrs


class SubgroupMmaComputeOp(Operation):
    """``%d = gpu.subgroup_mma_compute %a, %b, %c : !gpu.mma_matrix<16x16xf16, "AOp">, ... -> !gpu.mma_matrix<...>``."""

    name = "gpu.subgroup_mma_compute"
    traits = frozenset({Pure, SubgroupCollective})

    def __init__(self, a: Value, b: Value, c: Value, location=None):
        super().__init__([a, b, c], [c.type], location=location)

    def print_(self, p) -> None:
        types = ", ".join(str(v.type) for v in self.operands[:2])
        p.write(f"gpu.subgroup_mma_compute {p.values(self.operands)}{p.attr_dict(self)} : {types} -> "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        vals = p.parse_comma_list(p.parse_operand)
        if len(vals) != 3:
            raise p.error(f"expects 3 operands, got {len(vals)}", loc)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        types = p.parse_comma_list(p.parse_type)
        if len(types) != 2:
            raise p.error(f"expects the types of the A and B operands, got {len(types)} types", tloc)
        p.check_types(vals[:2], types, tloc)
        p.expect("->")
        rloc = p.loc()
        rt = p.parse_type()
        if rt != vals[2].type:
            raise p.error(f"result type {rt} must be the accumulator's type {vals[2].type}", rloc)
        return p.add_attributes(cls(*vals, location=loc), attrs)

    def verify_(self) -> None:
        a, b, c = (v.type for v in self.operands)
        if not all(isinstance(t, MMAMatrixType) for t in (a, b, c)) or (a.operand, b.operand, c.operand) != (
                "AOp", "BOp", "COp"):
            raise self.error("expects AOp, BOp and COp !gpu.mma_matrix operands")
        m, k = a.shape
        k2, n = b.shape
        if k != k2 or c.shape != (m, n):
            raise self.error(f"shapes do not compose: {a.shape} x {b.shape} -> {c.shape}")
        if a.element_type != b.element_type:
            raise self.error(f"A and B must have one element type, got {a.element_type} and {b.element_type}")
        accumulators = MMA_ACCUMULATORS.get(str(a.element_type), ())
        if str(c.element_type) not in accumulators:
            raise self.error(f"no matrix-unit product of {a.element_type} inputs accumulates in {c.element_type} "
                             f"(supported: {', '.join(accumulators) or 'none'})")


#: Input element type -> the accumulator types a matrix-unit product of it has (PTX ``mma``/``wmma``;
#: f32 inputs are rounded to TF32).
MMA_ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",), "f32": ("f32",), "i8": ("i32",)}


class SubgroupMmaConstantMatrixOp(Operation):
    """``%c = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">``."""

    name = "gpu.subgroup_mma_constant_matrix"
    traits = frozenset({Pure})

    def __init__(self, value: Value, result_type: Type, location=None):
        super().__init__([value], [result_type], location=location)

    def print_(self, p) -> None:
        p.write(f"gpu.subgroup_mma_constant_matrix {p.value(self.operands[0])}{p.attr_dict(self)} : "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        attrs, t, tloc = p.parse_attrs_and_type()
        if not isinstance(t, MMAMatrixType) or t.element_type != v.type:
            raise p.error(f"expects an !gpu.mma_matrix of {v.type}", tloc)
        return p.add_attributes(cls(v, t, location=loc), attrs)

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, MMAMatrixType) or t.element_type != self.operands[0].type:
            raise self.error("result must be an !gpu.mma_matrix of the operand's type")


def _verify_mma_memref(op: Operation, m: Value, idx, mt) -> None:
    if not isinstance(m.type, MemRefType) or len(idx) != m.type.rank:
        raise op.error("expects a memref and one index per dimension")
    if not isinstance(mt, MMAMatrixType):
        raise op.error("expects an !gpu.mma_matrix value")
    if m.type.element_type != mt.element_type:
        raise op.error(f"the memref's element type {m.type.element_type} must be the matrix's {mt.element_type}")
    if any(v.type != index for v in idx):
        raise op.error("indices must be of index type")
    if not isinstance(op.attributes.get("leadDimension"), IntegerAttr):
        raise op.error("needs an integer 'leadDimension' attribute")


#: ``gpu.subgroup_mma_elementwise`` kinds (MLIR's ``MMAElementwiseOp``): name -> (arity, element kind).
MMA_ELEMENTWISE_KINDS = {
    "addf": (2, "float"), "mulf": (2, "float"), "subf": (2, "float"), "maxf": (2, "float"), "minf": (2, "float"),
    "divf": (2, "float"), "addi": (2, "int"), "muli": (2, "int"), "subi": (2, "int"), "divs": (2, "int"),
    "divu": (2, "int"), "negatef": (1, "float"), "negates": (1, "int"), "extf": (1, "float"), "truncf": (1, "float"),
}


class SubgroupMmaElementwiseOp(Operation):
    """An element-wise op on whole warp-level matrices (MLIR syntax)::

        %r = gpu.subgroup_mma_elementwise addf %a, %b : (!gpu.mma_matrix<16x16xf16, "COp">,
                 !gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">

    Kinds (:data:`MMA_ELEMENTWISE_KINDS`): ``addf mulf subf maxf minf divf`` and ``addi muli subi divs
    divu`` on two matrices; ``negatef negates extf truncf`` on one. Each element is computed as the
    arith op of that name computes a scalar (``maxf``/``minf`` as ``arith.maximumf``/``minimumf``,
    ``divs``/``divu`` as ``arith.divsi``/``divui``, ``negates`` as ``0 - x``). The result has the
    operands' type, except ``extf``/``truncf`` (another float element type, same shape and use).
    """

    name = "gpu.subgroup_mma_elementwise"
    traits = frozenset({Pure})

    def __init__(self, kind: str, operands: Sequence[Value], result_type: Type, location=None):
        super().__init__(list(operands), [result_type], {"opType": kind}, location=location)

    @property
    def kind(self) -> str:
        return self.attributes["opType"]

    def print_(self, p) -> None:
        types = ", ".join(str(v.type) for v in self.operands)
        p.write(f"gpu.subgroup_mma_elementwise {self.kind} {p.values(self.operands)}"
                f"{p.attr_dict(self, ('opType',))} : ({types}) -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        kloc = p.loc()
        kind = p.parse_keyword(None, "an element-wise kind")
        if kind not in MMA_ELEMENTWISE_KINDS:
            raise p.error(f"unknown element-wise kind '{kind}' (one of {', '.join(MMA_ELEMENTWISE_KINDS)})", kloc)
        vals = p.parse_operands()
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.expect("(")
        p.check_types(vals, p.parse_comma_list(p.parse_type, ")"), tloc)
        p.expect("->")
        op = cls(kind, vals, p.parse_type(), location=loc)
        return p.add_attributes(op, attrs)

    def verify_(self) -> None:
        kind = self.kind
        if kind not in MMA_ELEMENTWISE_KINDS:
            raise self.error(f"unknown element-wise kind {kind!r}")
        arity, el_kind = MMA_ELEMENTWISE_KINDS[kind]
        if len(self.operands) != arity:
            raise self.error(f"'{kind}' takes {arity} operand{'s' if arity > 1 else ''}, got {len(self.operands)}")
        t, rt = self.operands[0].type, self.result.type
        if not isinstance(t, MMAMatrixType) or any(v.type != t for v in self.operands) or \
                not isinstance(rt, MMAMatrixType):
            raise self.error("operands and result must be !gpu.mma_matrix values, the operands of one type")
        wanted = FloatType if el_kind == "float" else IntegerType
        if not isinstance(t.element_type, wanted):
            raise self.error(f"'{kind}' expects {el_kind} elements, got {t.element_type}")
        if kind in ("extf", "truncf"):
            wider = kind == "extf"
            ok = isinstance(rt.element_type, FloatType) and (rt.shape, rt.operand) == (t.shape, t.operand) and \
                (rt.element_type.width > t.element_type.width) == wider and rt.element_type != t.element_type
            if not ok:
                raise self.error(f"'{kind}' must {'widen' if wider else 'narrow'} the element type of {t}, got {rt}")
        elif rt != t:
            raise self.error(f"result type {rt} must be the operands' type {t}")
