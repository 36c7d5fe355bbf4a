"""The ``nvgpu`` dialect subset: per-lane matrix-unit fragments and asynchronous copies (MLIR syntax).

Ops::

    %a = nvgpu.ldmatrix %sm[%i, %j] numTiles = 4 transpose = false : memref<64x64xf16, 3> -> vector<4x2xf16>
    %d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16] : (vector<4x2xf16>, vector<2x2xf16>,
             vector<2x2xf32>) -> vector<2x2xf32>
    %t = nvgpu.device_async_copy %A[%i, %j], %sm[%k, %l], 8 bypassL1 : memref<64x64xf16> to memref<64x64xf16, 3>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g numGroups = 0

(printed as upstream MLIR prints them today; the older attribute-dictionary spellings
``{numTiles = 4 : i32, transpose = false}``, ``{mmaShape = [16, 8, 16]}``, ``{bypassL1}``,
``{numGroups = 1 : i32}`` parse too.)

Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k*")
--------------------------------------------------------
``nvgpu.mma.sync`` and ``nvgpu.ldmatrix`` are per-lane views of warp-wide operations: each of the
32 lanes of a warp holds a *fragment*, a ``vector<R x P x T>`` whose row ``r`` is one 32-bit
register holding ``P = 32 / bits(T)`` elements (``P = 1`` for f32/TF32). With
``groupID = laneid >> 2`` (``g``) and ``threadID_in_group = laneid % 4`` (``t``), element ``[r][e]``
of a lane's fragment is, for ``mmaShape = [16, 8, K]``:

- A (16 x K, row-major), ``R = K / (2P)``: row ``g + 8 * (r % 2)``, column ``P*t + e + 4P * (r // 2)``.
  m16n8k16 f16/bf16 (``vector<4x2xf16>``): a0,a1: (g, 2t+e); a2,a3: (g+8, 2t+e); a4,a5: (g, 2t+e+8);
  a6,a7: (g+8, 2t+e+8). m16n8k8 TF32 (``vector<4x1xf32>``): a0 (g, t), a1 (g+8, t), a2 (g, t+4),
  a3 (g+8, t+4). m16n8k32 s8 (``vector<4x4xi8>``): (g, 4t+e), (g+8, 4t+e), (g, 4t+e+16), (g+8, 4t+e+16).
- B (K x 8, column-major), ``R = K / (4P)``: row ``P*t + e + 4P * r``, column ``g``.
  m16n8k16 f16 (``vector<2x2xf16>``): b0,b1: (2t+e, g); b2,b3: (2t+e+8, g). TF32 m16n8k8
  (``vector<2x1xf32>``): (t, g), (t+4, g). s8 m16n8k32 (``vector<2x4xi8>``): (4t+e, g), (4t+e+16, g).
- C and D (16 x 8), ``vector<2x2xT>`` for f32, f16 and i32 accumulators: ``[r][e]`` is
  row ``g + 8r``, column ``2t + e``.

The same formulas give the smaller shapes (m16n8k8 f16/bf16, m16n8k4 TF32, m16n8k16 s8).

``nvgpu.ldmatrix`` (PTX ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16``) loads ``numTiles``
8 x 8 matrices of 16-bit elements (8 rows of 16 bytes each): lane ``l`` gives the address of row
``l % 8`` of matrix ``l // 8`` (its own indices; lanes 8 * numTiles and up give none), and
receives in fragment row ``m`` the 32 bits at bytes ``4t .. 4t + 3`` of row ``g`` of matrix ``m``
(elements ``2t, 2t + 1`` for 16-bit types, ``4t .. 4t + 3`` for i8, element ``t`` for f32). With
``transpose`` (16-bit types only) it receives instead elements ``g`` of rows ``2t`` and ``2t + 1``.

Semantics of the interpreter (:mod:`affine_ir.interp.warp`): ``ldmatrix`` and ``mma.sync`` are
warp-collective (:class:`~affine_ir.traits.SubgroupCollective`): the 32 lanes of a warp (lane =
linear thread id in the block % 32) must all reach the same op; it then runs once with every lane's
operands. ``mma.sync`` computes ``D = A * B + C``: f16/bf16 inputs are exact in f32 and TF32 inputs
(f32 fragments) are first rounded to TF32 (10 mantissa bits, round to nearest with ties away from
zero, as ``cvt.rna.tf32.f32``); the products are exact, each element's sum (with C) is computed
exactly and rounded to f64 (``math.fsum``), then to the accumulator type (f32 or f16); s8 products
sum exactly and wrap to i32. Hardware sums in an unspecified order and may round in between, so on a GPU a
float result can differ from the interpreter's in the last bits; integer-valued data below 2**24
(f32) / 2**11 (f16) agrees exactly.

``nvgpu.device_async_copy`` copies ``dstElements`` contiguous elements (4, 8 or 16 bytes; 16 with
``bypassL1``) from global to shared memory; with ``srcElements`` only that many are read and the
rest are zero-filled. The source elements are contiguous in memory from the indexed one: they may
run on past the end of its row into the next (the row-major buffer read as the hardware reads it,
as MLIR's lowering addresses it); the destination's stay in their row. The interpreter performs a
thread's copies when an ``nvgpu.device_async_wait`` retires their group (or at the end of the
thread), not at the copy: reading the destination before the wait sees the old contents, as on a
GPU it may. ``device_async_create_group`` groups the
thread's pending copies (PTX ``cp.async.commit_group`` groups all of them: the tokens must name
exactly those); ``device_async_wait`` (``cp.async.wait_group numGroups``) completes all but the
``numGroups`` most recent groups (all when absent), and the group it names must be complete after it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..attributes import ArrayAttr, IntegerAttr, UnitAttr
from ..core import Operation, Value
from ..traits import EffectKind, MemoryEffect, Pure, SubgroupCollective
from ..types import FloatType, GPUAddressSpace, IntegerType, MemRefType, Type, VectorType, async_token, i32, index

#: Input element type -> (the K of its ``mmaShape = [16, 8, K]``, accumulator element types).
MMA_SYNC_TYPES = {"f16": ((8, 16), ("f32", "f16")), "bf16": ((8, 16), ("f32",)), "f32": ((4, 8), ("f32",)),
                  "i8": ((16, 32), ("i32",))}
ASYNC_COPY_BYTES = (4, 8, 16)


def elements_per_register(t: Type) -> int:
    """How many elements of type ``t`` one 32-bit fragment register holds (f32/TF32: 1)."""
    return max(1, 32 // t.width)


def fragment_position(role: str, g, t, r, e, per_register: int):
    """(row, column) of the matrix element that element ``[r][e]`` of lane ``4g + t``'s ``role``
    ("A", "B" or "C") fragment holds in ``mma.sync`` m16n8k``K`` (PTX's layout; ``per_register``
    elements a 32-bit register). ``g``, ``t``, ``r`` and ``e`` may be ints, numpy arrays or (``g``,
    ``t``) affine expressions: the formulas use only ``+`` and ``*`` on them (and ``%``, ``//`` on ``r``)."""
    p = per_register
    if role == "A":
        return g + 8 * (r % 2), p * t + e + 4 * p * (r // 2)
    if role == "B":
        return p * t + e + 4 * p * r, g
    return g + 8 * r, 2 * t + e


def fragment_shapes(k: int, t: Type) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """The per-lane fragment shapes of A, B and C/D of ``mma.sync`` m16n8k``k`` on inputs of type
    ``t``: ``(K / 2P, P)``, ``(K / 4P, P)`` and ``(2, 2)`` with ``P`` elements per register."""
    p = elements_per_register(t)
    return (k // (2 * p), p), (k // (4 * p), p), (2, 2)


def is_shared(t: Type) -> bool:
    """True for a memref in workgroup (shared) memory: ``#gpu.address_space<workgroup>`` or ``3``."""
    if not isinstance(t, MemRefType):
        return False
    s = t.memory_space
    return (isinstance(s, GPUAddressSpace) and s.name == "workgroup") or s == 3


def _int_attr(attrs: dict, key: str) -> int | None:
    a = attrs.get(key)
    return a.value if isinstance(a, IntegerAttr) else None


def parse_keyword_attrs(p, attrs: dict, spec: dict) -> None:
    """Upstream's keyword spelling: ``name = value`` for each ``spec`` entry ``name: parser`` that
    follows (in any order), or a bare ``name`` for a unit attribute (``parser`` None)."""
    progress = True
    while progress:
        progress = False
        for key, parse in spec.items():
            if key not in attrs and p.accept(key):
                if parse is None:
                    attrs[key] = UnitAttr()
                else:
                    p.expect("=")
                    attrs[key] = parse()
                progress = True


def _check_indices(op: Operation, m: Value, idx: Sequence[Value], what: str) -> None:
    if not isinstance(m.type, MemRefType) or len(idx) != m.type.rank or not idx:
        raise op.error(f"expects the {what} memref (of rank 1 or more) and one index per dimension")
    if any(v.type != index for v in idx):
        raise op.error("indices must be of index type")


class LdMatrixOp(Operation):
    """``%r = nvgpu.ldmatrix %sm[%i, %j] numTiles = 4 transpose = false : memref<..., 3> -> vector<4x2xf16>``:
    each lane's fragment of ``numTiles`` 8 x 8 matrices of shared memory (see the module docstring)."""

    name = "nvgpu.ldmatrix"
    traits = frozenset({SubgroupCollective})

    def __init__(self, memref: Value, indices: Sequence[Value], num_tiles: int, transpose: bool,
                 result_type: VectorType, location=None, name_hint=None):
        super().__init__([memref, *indices], [result_type],
                         {"numTiles": IntegerAttr(num_tiles, i32), "transpose": bool(transpose)},
                         location=location, result_names=[name_hint])

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def indices(self) -> tuple[Value, ...]:
        return self.operands[1:]

    @property
    def num_tiles(self) -> int:
        return _int_attr(self.attributes, "numTiles") or 0

    @property
    def transpose(self) -> bool:
        return self.attributes.get("transpose") is True

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ of the memref."""
        return (MemoryEffect(EffectKind.READ, self.memref),)

    def print_(self, p) -> None:
        p.write(f"nvgpu.ldmatrix {p.value(self.memref)}[{p.values(self.indices)}] numTiles = {self.num_tiles} "
                f"transpose = {'true' if self.transpose else 'false'}{p.attr_dict(self, ('numTiles', 'transpose'))}"
                f" : {self.memref.type} -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        m, idx = p.parse_indexed_operand()
        attrs: dict = {}
        parse_keyword_attrs(p, attrs, {"numTiles": p.parse_integer, "transpose": p.parse_attribute})
        extra = p.parse_optional_attr_dict()
        for key in ("numTiles", "transpose"):
            if key in extra:
                attrs[key] = extra.pop(key)
        tloc = p.loc()
        p.check_type(m, p.parse_colon_type(), tloc)
        p.expect("->")
        rt = p.parse_type()
        tiles = attrs.get("numTiles")
        tiles = tiles.value if isinstance(tiles, IntegerAttr) else tiles
        if not isinstance(tiles, int) or not isinstance(attrs.get("transpose"), bool):
            raise p.error("'nvgpu.ldmatrix' needs 'numTiles = <1, 2 or 4>' and 'transpose = <true or false>'", loc)
        if not isinstance(rt, VectorType):
            raise p.error(f"expected a vector result type, found {rt}", tloc)
        return p.add_attributes(cls(m, idx, tiles, attrs["transpose"], rt, location=loc), extra)

    def verify_(self) -> None:
        m, rt = self.memref, self.result.type
        _check_indices(self, m, self.indices, "source")
        if not is_shared(m.type):
            raise self.error(f"expects a memref in shared memory (address space 3 or workgroup), got {m.type}")
        el = m.type.element_type
        if not isinstance(rt, VectorType) or rt.element_type != el:
            raise self.error(f"the result must be a vector of the memref's element type {el}, got {rt}")
        if self.num_tiles not in (1, 2, 4):
            raise self.error(f"numTiles must be 1, 2 or 4, got {self.num_tiles}")
        if not isinstance(el, (FloatType, IntegerType)) or el.width > 32 or 32 % el.width:
            raise self.error(f"loads 8-, 16- or 32-bit elements, got {el}")
        want = (self.num_tiles, elements_per_register(el))
        if rt.shape != want:
            raise self.error(f"numTiles = {self.num_tiles} of {el} gives vector<{want[0]}x{want[1]}x{el}>, got {rt}")
        if self.transpose and el.width != 16:
            raise self.error(f"transpose works on 16-bit elements only, got {el}")


class MmaSyncOp(Operation):
    """``%d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16] : (vector<4x2xf16>, vector<2x2xf16>,
    vector<2x2xf32>) -> vector<2x2xf32>``: ``D = A * B + C`` of the warp, on each lane's fragments (f32
    inputs need ``tf32Enabled``: they are rounded to TF32)."""

    name = "nvgpu.mma.sync"
    traits = frozenset({Pure, SubgroupCollective})

    def __init__(self, a: Value, b: Value, c: Value, mma_shape: Sequence[int], tf32: bool = False, location=None,
                 name_hint=None):
        attrs: dict = {"mmaShape": ArrayAttr(tuple(IntegerAttr(int(x), IntegerType(64)) for x in mma_shape))}
        if tf32:
            attrs["tf32Enabled"] = UnitAttr()
        super().__init__([a, b, c], [c.type], attrs, location=location, result_names=[name_hint])

    @property
    def mma_shape(self) -> tuple[int, ...]:
        a = self.attributes.get("mmaShape")
        if not isinstance(a, ArrayAttr) or not all(isinstance(x, IntegerAttr) for x in a.elements):
            return ()
        return tuple(x.value for x in a.elements)

    @property
    def tf32_enabled(self) -> bool:
        return "tf32Enabled" in self.attributes

    def print_(self, p) -> None:
        shape = ", ".join(map(str, self.mma_shape))
        types = ", ".join(str(v.type) for v in self.operands)
        tf32 = " tf32Enabled" if self.tf32_enabled else ""
        p.write(f"nvgpu.mma.sync({p.values(self.operands)}) mmaShape = [{shape}]{tf32}"
                f"{p.attr_dict(self, ('mmaShape', 'tf32Enabled'))} : ({types}) -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        p.expect("(")
        vals = p.parse_operands(")")
        if len(vals) != 3:
            raise p.error(f"'nvgpu.mma.sync' takes 3 operands (A, B, C), got {len(vals)}", loc)
        attrs: dict = {}
        parse_keyword_attrs(p, attrs, {"mmaShape": p.parse_attribute, "tf32Enabled": None})
        extra = p.parse_optional_attr_dict()
        for key in ("mmaShape", "tf32Enabled"):
            if key in extra:
                attrs[key] = extra.pop(key)
        tloc = p.loc()
        p.expect(":")
        p.expect("(")
        p.check_types(vals, p.parse_comma_list(p.parse_type, ")"), tloc)
        p.expect("->")
        rloc = p.loc()
        rt = p.parse_type()
        if rt != vals[2].type:
            raise p.error(f"result type {rt} must be the accumulator's type {vals[2].type}", rloc)
        shape = attrs.get("mmaShape")
        if not isinstance(shape, ArrayAttr) or not all(isinstance(x, IntegerAttr) for x in shape.elements):
            raise p.error("'nvgpu.mma.sync' needs 'mmaShape = [m, n, k]'", loc)
        op = cls(*vals, [x.value for x in shape.elements], "tf32Enabled" in attrs, location=loc)
        return p.add_attributes(op, extra)

    def verify_(self) -> None:
        a, b, c = (v.type for v in self.operands)
        if not all(isinstance(t, VectorType) and t.rank == 2 for t in (a, b, c)) or self.result.type != c:
            raise self.error("expects 2-d vector fragments A, B, C and a result of C's type")
        if a.element_type != b.element_type:
            raise self.error(f"A and B must have one element type, got {a.element_type} and {b.element_type}")
        el, acc = str(a.element_type), str(c.element_type)
        shape = self.mma_shape
        if el not in MMA_SYNC_TYPES:
            raise self.error(f"no mma.sync on {el} inputs (f16, bf16, f32 as TF32, i8)")
        ks, accumulators = MMA_SYNC_TYPES[el]
        if len(shape) != 3 or shape[:2] != (16, 8) or shape[2] not in ks:
            raise self.error(f"mmaShape must be [16, 8, k] with k in {ks} for {el} inputs, got {list(shape)}")
        if acc not in accumulators:
            raise self.error(f"{el} inputs accumulate in {' or '.join(accumulators)}, not {acc}")
        if (el == "f32") != self.tf32_enabled:
            raise self.error("f32 inputs need 'tf32Enabled' (they are rounded to TF32)" if el == "f32" else
                             f"'tf32Enabled' applies to f32 inputs only, got {el}")
        for what, t, want in zip("ABC", (a, b, c), fragment_shapes(shape[2], a.element_type)):
            if t.shape != want:
                raise self.error(f"the {what} fragment of m16n8k{shape[2]} on {el} must be "
                                 f"vector<{want[0]}x{want[1]}x{t.element_type}>, got {t}")


class DeviceAsyncCopyOp(Operation):
    """``%t = nvgpu.device_async_copy %src[%i], %dst[%j], 8 [, %srcElements] [bypassL1] : memref<..> to
    memref<.., 3>``: an asynchronous copy of ``dstElements`` elements from global to shared memory."""

    name = "nvgpu.device_async_copy"

    def __init__(self, src: Value, src_indices: Sequence[Value], dst: Value, dst_indices: Sequence[Value],
                 dst_elements: int, src_elements: Value | None = None, bypass_l1: bool = False, location=None,
                 name_hint=None):
        ops = [src, *src_indices, dst, *dst_indices] + ([src_elements] if src_elements is not None else [])
        attrs: dict = {"dstElements": IntegerAttr(dst_elements, index)}
        if bypass_l1:
            attrs["bypassL1"] = UnitAttr()
        super().__init__(ops, [async_token], attrs, location=location, result_names=[name_hint])

    def _split(self) -> tuple[Value, tuple, Value, tuple, Value | None]:
        src = self.operands[0]
        rs = src.type.rank if isinstance(src.type, MemRefType) else 0
        dst = self.operands[1 + rs]
        rd = dst.type.rank if isinstance(dst.type, MemRefType) else 0
        rest = self.operands[2 + rs + rd:]
        return src, self.operands[1:1 + rs], dst, self.operands[2 + rs:2 + rs + rd], rest[0] if rest else None

    @property
    def src(self) -> Value:
        return self._split()[0]

    @property
    def src_indices(self) -> tuple[Value, ...]:
        return self._split()[1]

    @property
    def dst(self) -> Value:
        return self._split()[2]

    @property
    def dst_indices(self) -> tuple[Value, ...]:
        return self._split()[3]

    @property
    def src_elements(self) -> Value | None:
        return self._split()[4]

    @property
    def dst_elements(self) -> int:
        return _int_attr(self.attributes, "dstElements") or 0

    @property
    def bypass_l1(self) -> bool:
        return "bypassL1" in self.attributes

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ of the source, WRITE of the destination (completed by a later ``device_async_wait``)."""
        return (MemoryEffect(EffectKind.READ, self.src), MemoryEffect(EffectKind.WRITE, self.dst))

    def print_(self, p) -> None:
        src, si, dst, di, n = self._split()
        extra = f", {p.value(n)}" if n is not None else ""
        flag = " bypassL1" if self.bypass_l1 else ""
        p.write(f"nvgpu.device_async_copy {p.value(src)}[{p.values(si)}], {p.value(dst)}[{p.values(di)}], "
                f"{self.dst_elements}{extra}{flag}{p.attr_dict(self, ('dstElements', 'bypassL1'))} : {src.type} to "
                f"{dst.type}")

    @classmethod
    def parse_(cls, p, loc):
        src, si = p.parse_indexed_operand()
        p.expect(",")
        dst, di = p.parse_indexed_operand()
        p.expect(",")
        n = p.parse_integer("the number of elements to copy")
        src_n = p.parse_operand(index) if p.accept(",") else None
        bypass = p.accept("bypassL1")
        attrs = p.parse_optional_attr_dict()
        bypass = bypass or attrs.pop("bypassL1", None) is not None
        tloc = p.loc()
        p.check_type(src, p.parse_colon_type(), tloc)
        p.expect("to")
        p.check_type(dst, p.parse_type(), tloc)
        return p.add_attributes(cls(src, si, dst, di, n, src_n, bypass, location=loc), attrs)

    def verify_(self) -> None:
        src, si, dst, di, n = self._split()
        _check_indices(self, src, si, "source")
        _check_indices(self, dst, di, "destination")
        if not is_shared(dst.type):
            raise self.error(f"the destination must be in shared memory (address space 3 or workgroup), got {dst.type}")
        if is_shared(src.type):
            raise self.error(f"the source must be in global memory, got {src.type}")
        el = dst.type.element_type
        if src.type.element_type != el:
            raise self.error(f"source and destination element types differ: {src.type.element_type} and {el}")
        if not isinstance(el, (FloatType, IntegerType)) or el.width % 8:
            raise self.error(f"copies elements of whole bytes, got {el}")
        size = self.dst_elements * el.width // 8
        if size not in ASYNC_COPY_BYTES:
            raise self.error(f"copies 4, 8 or 16 bytes, got {self.dst_elements} x {el} = {size} bytes")
        if self.bypass_l1 and size != 16:
            raise self.error(f"bypassL1 needs a 16-byte copy, got {size} bytes")
        if n is not None and n.type != index:
            raise self.error("srcElements must be of index type")
        if self.results[0].type != async_token:
            raise self.error("the result must be a !nvgpu.device.async.token")


class DeviceAsyncCreateGroupOp(Operation):
    """``%g = nvgpu.device_async_create_group %t0, %t1``: the group of the thread's pending copies
    (PTX ``cp.async.commit_group``); the tokens name those copies."""

    name = "nvgpu.device_async_create_group"

    def __init__(self, tokens: Sequence[Value], location=None, name_hint=None):
        super().__init__(list(tokens), [async_token], location=location, result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"nvgpu.device_async_create_group {p.values(self.operands)}{p.attr_dict(self)}")

    @classmethod
    def parse_(cls, p, loc):
        vals = p.parse_operands()
        if not vals:
            raise p.error("'nvgpu.device_async_create_group' needs the tokens of the copies it groups", loc)
        return p.add_attributes(cls(vals, location=loc), p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if not self.operands:
            raise self.error("needs the tokens of the copies it groups")
        for v in self.operands:
            if v.type != async_token or (isinstance(v.owner, Operation) and not isinstance(v.owner, DeviceAsyncCopyOp)):
                raise self.error("each operand must be the token of an 'nvgpu.device_async_copy'")


class DeviceAsyncWaitOp(Operation):
    """``nvgpu.device_async_wait %g [numGroups = N]``: wait until at most ``N`` of the thread's most recent
    copy groups are pending (PTX ``cp.async.wait_group N``; all complete when ``N`` is absent)."""

    name = "nvgpu.device_async_wait"

    def __init__(self, group: Value, num_groups: int | None = None, location=None):
        attrs = {} if num_groups is None else {"numGroups": IntegerAttr(num_groups, i32)}
        super().__init__([group], [], attrs, location=location)

    @property
    def num_groups(self) -> int:
        return _int_attr(self.attributes, "numGroups") or 0

    def print_(self, p) -> None:
        n = f" numGroups = {self.num_groups}" if "numGroups" in self.attributes else ""
        p.write(f"nvgpu.device_async_wait {p.value(self.operands[0])}{n}{p.attr_dict(self, ('numGroups',))}")

    @classmethod
    def parse_(cls, p, loc):
        g = p.parse_operand(async_token)
        attrs: dict = {}
        parse_keyword_attrs(p, attrs, {"numGroups": p.parse_integer})
        extra = p.parse_optional_attr_dict()
        n = attrs.get("numGroups", extra.pop("numGroups", None))
        if isinstance(n, IntegerAttr):
            n = n.value
        if n is not None and not isinstance(n, int):
            raise p.error("numGroups must be an integer", loc)
        return p.add_attributes(cls(g, n, location=loc), extra)

    def verify_(self) -> None:
        g = self.operands[0] if len(self.operands) == 1 else None
        # a group's token may come through a loop's or an if's results (a pipeline carries them in iter_args)
        if g is None or g.type != async_token or (isinstance(g.owner, Operation) and not g.owner.regions and
                                                  not isinstance(g.owner, DeviceAsyncCreateGroupOp)):
            raise self.error("waits on one token of an 'nvgpu.device_async_create_group'")
        if "numGroups" in self.attributes and (_int_attr(self.attributes, "numGroups") is None or
                                               self.num_groups < 0):
            raise self.error("numGroups must be a non-negative integer")
