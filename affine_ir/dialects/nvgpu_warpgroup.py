"""The warpgroup ops of the Hopper ``nvgpu`` dialect: wgmma descriptors, accumulators and ``warpgroup.mma``.

Their semantics (warpgroups, the accumulator layout, the K-major operand tiles, when a wgmma group
reads its operands) are documented with the other Hopper ops in :mod:`.nvgpu_hopper`, which re-exports
these classes.
"""

from __future__ import annotations

from ..attributes import IntegerAttr, UnitAttr
from ..core import Operation, Value
from ..traits import EffectKind, MemoryEffect, Pure, WarpgroupCollective
from ..types import (
    MemRefType,
    TensorMapDescriptorType,
    WarpgroupAccumulatorType,
    WarpgroupDescriptorType,
    bf16,
    element_size_in_bytes,
    f8E4M3FN,
    f8E5M2,
    f16,
    i64,
    swizzle_bytes,
)
from ._nvgpu_common import verify_accumulator, verify_swizzle_alignment, verify_tensor_map
from .nvgpu import is_shared, parse_keyword_attrs

__all__ = ["WarpgroupGenerateDescriptorOp", "WarpgroupMmaInitAccumulatorOp", "WarpgroupMmaOp", "WarpgroupMmaStoreOp"]

WGMMA_INPUTS = (f16, bf16, f8E4M3FN, f8E5M2)
#: Inputs wgmma reads K-major only (no imm-trans operands): A without transposeA, B with transposeB.
K_MAJOR_ONLY = (f8E4M3FN, f8E5M2)
SUPPORTED_SWIZZLE = "swizzle_128b"


class WarpgroupGenerateDescriptorOp(Operation):
    """``%w = nvgpu.warpgroup.generate.descriptor %smem, %d : memref<..., 3>, !D -> !nvgpu.warpgroup.descriptor<
    tensor = memref<..., 3>>``: the wgmma descriptor of the shared tile ``tensor``, laid out (swizzled)
    as the TMA descriptor ``tensor_map`` writes it. Effects: READ of the tile (the wgmma that uses the
    descriptor reads it)."""

    name = "nvgpu.warpgroup.generate.descriptor"

    def __init__(self, tensor: Value, tensor_map: Value, descriptor_type: WarpgroupDescriptorType, location=None,
                 name_hint=None, attributes=None):
        super().__init__([tensor, tensor_map], [descriptor_type], attributes, location=location,
                         result_names=[name_hint])

    @property
    def tensor(self) -> Value:
        return self.operands[0]

    @property
    def tensor_map(self) -> Value:
        return self.operands[1]

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ of the shared tile."""
        return (MemoryEffect(EffectKind.READ, self.tensor),)

    def print_(self, p) -> None:
        p.write(f"nvgpu.warpgroup.generate.descriptor {p.values(self.operands)}{p.attr_dict(self)} : "
                f"{self.tensor.type}, {self.tensor_map.type} -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        t, d = p.parse_operand_list(2)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(t, p.parse_type(), tloc)
        p.expect(",")
        p.check_type(d, p.parse_nvgpu_type(TensorMapDescriptorType), tloc)
        p.expect("->")
        return cls(t, d, p.parse_nvgpu_type(WarpgroupDescriptorType), location=loc, attributes=attrs)

    def verify_(self) -> None:
        d = verify_tensor_map(self, self.tensor_map.type)
        t, rt = self.tensor.type, self.result.type
        if not isinstance(t, MemRefType) or t.rank != 2 or not t.has_static_shape or not is_shared(t):
            raise self.error(f"the tile must be a static 2-D memref in shared memory, got {t}")
        if not isinstance(rt, WarpgroupDescriptorType) or rt.tensor != t:
            raise self.error(f"the result must be !nvgpu.warpgroup.descriptor<tensor = {t}>, got {rt}")
        if t.element_type != d.tensor.element_type:
            raise self.error(f"the tile's element type {t.element_type} differs from the tensor map's "
                             f"{d.tensor.element_type}")
        if d.swizzle != SUPPORTED_SWIZZLE or d.interleave != "none":
            raise self.error(f"supports tensor maps with swizzle = {SUPPORTED_SWIZZLE} and interleave = none only "
                             f"(swizzle = {d.swizzle}, interleave = {d.interleave} is not supported yet)")
        verify_swizzle_alignment(self, self.tensor, d.swizzle, "tile")


class WarpgroupMmaInitAccumulatorOp(Operation):
    """``%acc = nvgpu.warpgroup.mma.init.accumulator -> !nvgpu.warpgroup.accumulator<fragmented =
    vector<MxNxf32>>``: a zero accumulator (each thread's fragment of it). ``Pure``."""

    name = "nvgpu.warpgroup.mma.init.accumulator"
    traits = frozenset({Pure})

    def __init__(self, accumulator_type: WarpgroupAccumulatorType, location=None, name_hint=None, attributes=None):
        super().__init__([], [accumulator_type], attributes, location=location, result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"nvgpu.warpgroup.mma.init.accumulator{p.attr_dict(self)} -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        attrs = p.parse_optional_attr_dict()
        p.expect("->")
        return cls(p.parse_nvgpu_type(WarpgroupAccumulatorType), location=loc, attributes=attrs)

    def verify_(self) -> None:
        verify_accumulator(self, self.result.type, "result")


class WarpgroupMmaOp(Operation):
    """``%r = nvgpu.warpgroup.mma %wa, %wb, %acc [waitGroup = N] [transposeA] [transposeB] : !WA, !WB, !Acc ->
    !Acc``: ``D = A * B + C`` of the warpgroup (wgmma m64nNk16, k32 for 8-bit floats, on descriptors of shared
    tiles), committed as one wgmma group, then a wait until at most ``wait_group`` (default 1) groups are pending.
    Warpgroup-collective; effects: READ and WRITE of unnamed memory (the operand tiles, the groups)."""

    name = "nvgpu.warpgroup.mma"
    traits = frozenset({WarpgroupCollective})
    KEYWORDS = ("waitGroup", "transposeA", "transposeB")

    def __init__(self, descriptor_a: Value, descriptor_b: Value, matrix_c: Value, wait_group: int | None = None,
                 transpose_a: bool = False, transpose_b: bool = False, location=None, name_hint=None,
                 attributes=None):
        attrs = dict(attributes or {})
        if wait_group is not None:
            attrs["waitGroup"] = IntegerAttr(wait_group, i64)
        for key, on in (("transposeA", transpose_a), ("transposeB", transpose_b)):
            if on:
                attrs[key] = UnitAttr()
        super().__init__([descriptor_a, descriptor_b, matrix_c], [matrix_c.type], attrs, location=location,
                         result_names=[name_hint])

    @property
    def descriptor_a(self) -> Value:
        return self.operands[0]

    @property
    def descriptor_b(self) -> Value:
        return self.operands[1]

    @property
    def matrix_c(self) -> Value:
        return self.operands[2]

    @property
    def wait_group(self) -> int:
        a = self.attributes.get("waitGroup")
        return a.value if isinstance(a, IntegerAttr) else 1

    @property
    def transpose_a(self) -> bool:
        return "transposeA" in self.attributes

    @property
    def transpose_b(self) -> bool:
        return "transposeB" in self.attributes

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ of unnamed memory (the shared tiles its descriptors name) and WRITE of it (the
        warpgroup's wgmma groups): never erased, nothing moves across it."""
        return (MemoryEffect(EffectKind.READ), MemoryEffect(EffectKind.WRITE))

    def print_(self, p) -> None:
        words = f" waitGroup = {self.wait_group}" if "waitGroup" in self.attributes else ""
        words += " transposeA" * self.transpose_a + " transposeB" * self.transpose_b
        types = ", ".join(str(v.type) for v in self.operands)
        p.write(f"nvgpu.warpgroup.mma {p.values(self.operands)}{words}{p.attr_dict(self, self.KEYWORDS)} : {types} -> "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        a, b, c = p.parse_operand_list(3)
        attrs: dict = {}
        parse_keyword_attrs(p, attrs, {"waitGroup": p.parse_integer, "transposeA": None, "transposeB": None})
        extra = p.parse_optional_attr_dict()
        for key in cls.KEYWORDS:
            if key in extra:
                if key in attrs:
                    raise p.error(f"'{key}' is given twice", extra.loc)
                attrs[key] = extra.pop(key)
        wait = attrs.get("waitGroup")
        wait = wait.value if isinstance(wait, IntegerAttr) else wait
        if wait is not None and not isinstance(wait, int):
            raise p.error("waitGroup must be an integer", loc)
        tloc = p.loc()
        p.expect(":")
        p.check_type(a, p.parse_nvgpu_type(WarpgroupDescriptorType), tloc)
        p.expect(",")
        p.check_type(b, p.parse_nvgpu_type(WarpgroupDescriptorType), tloc)
        p.expect(",")
        p.check_type(c, p.parse_nvgpu_type(WarpgroupAccumulatorType), tloc)
        p.expect("->")
        rloc = p.loc()
        rt = p.parse_nvgpu_type(WarpgroupAccumulatorType)
        if rt != c.type:
            raise p.error(f"the result type {rt} must be the accumulator's type {c.type}", rloc)
        op = cls(a, b, c, wait, "transposeA" in attrs, "transposeB" in attrs, location=loc)
        return p.add_attributes(op, extra)

    def verify_(self) -> None:
        if len(self.operands) != 3 or len(self.results) != 1:
            raise self.error("takes descriptors of A and B and an accumulator, and gives one accumulator")
        ta, tb = self.descriptor_a.type, self.descriptor_b.type
        for what, t in (("A", ta), ("B", tb)):
            if not isinstance(t, WarpgroupDescriptorType) or t.tensor.rank != 2:
                raise self.error(f"the descriptor of {what} must be an !nvgpu.warpgroup.descriptor of a 2-D tile, "
                                 f"got {t}")
        acc = verify_accumulator(self, self.matrix_c.type, "accumulator")
        if self.result.type != self.matrix_c.type:
            raise self.error(f"the result type {self.result.type} must be the accumulator's {self.matrix_c.type}")
        if self.wait_group < 0:
            raise self.error(f"waitGroup must be non-negative, got {self.wait_group}")
        a, b = ta.tensor, tb.tensor
        el = a.element_type
        if el not in WGMMA_INPUTS or b.element_type != el:
            raise self.error(f"supports f16, bf16, f8E4M3FN or f8E5M2 inputs of one type only, got {a.element_type} "
                             f"and {b.element_type} (others are not supported yet)")
        if el in K_MAJOR_ONLY and (self.transpose_a or not self.transpose_b):
            raise self.error(f"{el} operands are read K-major only: A without transposeA and B with transposeB "
                             f"(stored N x K), got {'transposeA' if self.transpose_a else 'no transposeB'}")
        span_elems = swizzle_bytes(SUPPORTED_SWIZZLE) // (element_size_in_bytes(el) or 1)
        (m, k), (kb, n) = a.shape, b.shape
        if k != kb:
            raise self.error(f"A ({a}: M x K) and B ({b}: K x N) differ in K: {k} and {kb}")
        if k != span_elems:
            raise self.error(f"supports K = {span_elems} (128-byte rows of {el}) only, got K = {k} (not supported yet)")
        if self.transpose_a and m % span_elems:
            raise self.error(f"an MN-major A ({a} with transposeA: stored K x M) needs M a multiple of {span_elems} "
                             f"(whole 128-byte column chunks), got {m}")
        if not self.transpose_b and n % span_elems:
            raise self.error(f"an MN-major B ({b} without transposeB: stored K x N) needs N a multiple of "
                             f"{span_elems} (whole 128-byte column chunks), got {n}")
        if acc.shape != (m, n):
            raise self.error(f"the accumulator {acc} must be M x N = {m} x {n} (A is {a}, B is {b})")


class WarpgroupMmaStoreOp(Operation):
    """``nvgpu.warpgroup.mma.store %acc, %mem : !Acc to memref<MxNxf32>``: each thread writes its part of
    the accumulator to the M x N memref. Warpgroup-collective; effects: WRITE of the memref."""

    name = "nvgpu.warpgroup.mma.store"
    traits = frozenset({WarpgroupCollective})

    def __init__(self, matrix_d: Value, dst: Value, location=None, attributes=None):
        super().__init__([matrix_d, dst], [], attributes, location=location)

    @property
    def matrix_d(self) -> Value:
        return self.operands[0]

    @property
    def dst(self) -> Value:
        return self.operands[1]

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """WRITE of the destination memref."""
        return (MemoryEffect(EffectKind.WRITE, self.dst),)

    def print_(self, p) -> None:
        p.write(f"nvgpu.warpgroup.mma.store {p.values(self.operands)}{p.attr_dict(self)} : {self.matrix_d.type} to "
                f"{self.dst.type}")

    @classmethod
    def parse_(cls, p, loc):
        d, mem = p.parse_operand_list(2)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(d, p.parse_nvgpu_type(WarpgroupAccumulatorType), tloc)
        p.expect("to")
        p.check_type(mem, p.parse_type(), tloc)
        return cls(d, mem, location=loc, attributes=attrs)

    def verify_(self) -> None:
        if len(self.operands) != 2:
            raise self.error("takes an accumulator and a memref")
        acc = verify_accumulator(self, self.matrix_d.type, "accumulator")
        t = self.dst.type
        if not isinstance(t, MemRefType) or t.shape != acc.shape:
            raise self.error(f"the destination must be a {acc.shape[0]}x{acc.shape[1]} memref (the accumulator's "
                             f"M x N), got {t}")
        if t.element_type != acc.element_type:
            raise self.error(f"the destination's element type must be the accumulator's {acc.element_type}, got "
                             f"{t.element_type} (converting stores are not supported yet)")
