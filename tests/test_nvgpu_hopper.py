# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""The Hopper ops as IR (issue 19): the ``nvgpu`` mbarrier/TMA/warpgroup ops, the ``nvvm`` subset,
``memref.view``/``memref.cast``, their types and ``!alias`` type aliases.

Text round trips (the spec's example and iree-opt's own printing of it, whose nvgpu types have the
dialect prefix elided), located parse errors and verifier refusals that name the op, and the traits
and effects passes see (DCE keeps what acts on barriers or asynchronous state)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import affine_ir as air
from affine_ir import ParseError, VerifyError
from affine_ir.dialects.memref import CastOp, ViewOp
from affine_ir.dialects.nvgpu_hopper import (
    MBarrierCreateOp,
    TmaAsyncLoadOp,
    TmaAsyncStoreOp,
    WarpgroupMmaOp,
)
from affine_ir.dialects.nvvm import FenceProxyOp, SetMaxRegisterOp
from affine_ir.testing.examples import HOPPER
from affine_ir.traits import (
    EffectKind,
    Pure,
    SubgroupCollective,
    ViewLike,
    WarpgroupCollective,
    is_trivially_dead,
    view_source,
    would_be_trivially_dead,
)
from affine_ir.types import (
    MBarrierGroupType,
    TensorMapDescriptorType,
    UnrankedMemRefType,
    WarpgroupAccumulatorType,
    index,
    memref,
    swizzle_bytes,
    vector,
)
from transforms import PassManager

IREE_OPT = shutil.which("iree-opt")
needs_iree = pytest.mark.skipif(IREE_OPT is None, reason="iree-opt (upstream MLIR) not on PATH")

#: iree-opt's printing of HOPPER (``iree-opt hopper.mlir``): MLIR's names, the aliases resolved, the
#: nvgpu types in the ops' type positions with the dialect prefix elided.
IREE_OUT = """\
module {
  func.func @f(%arg0: memref<*xf16>, %arg1: memref<4096x4096xf16>, %arg2: memref<?xi8, 3>, %arg3: memref<128x64xf16, 3>, %arg4: memref<64x64xf16, 3>, %arg5: memref<128x64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c16384 = arith.constant 16384 : index
    %c10000000 = arith.constant 10000000 : index
    %false = arith.constant false
    %cast = memref.cast %arg1 : memref<4096x4096xf16> to memref<*xf16>
    %view = memref.view %arg2[%c16384][] : memref<?xi8, 3> to memref<128x64xf16, 3>
    %0 = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    nvgpu.mbarrier.init %0[%c0], %c1 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    nvgpu.mbarrier.init %0[%c0], %c1, predicate = %false : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    %1 = nvgpu.tma.create.descriptor %arg0 box[%c128, %c64] : memref<*xf16> -> <tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    %2 = nvgpu.tma.create.descriptor %arg0 box[%c64, %c64] : memref<*xf16> -> <tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    nvgpu.tma.prefetch.descriptor %1 : <tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    nvgpu.mbarrier.arrive.expect_tx %0[%c0], %c16384 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    %3 = nvgpu.mbarrier.arrive %0[%c0] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2> -> !nvgpu.mbarrier.token
    nvgpu.tma.async.load %1[%c0, %c0], %0[%c0] to %arg3 : <tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2> -> memref<128x64xf16, 3>
    nvgpu.tma.async.store %arg3 to %1[%c0, %c0] : memref<128x64xf16, 3> -> <tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    nvgpu.mbarrier.try_wait.parity %0[%c0], %false, %c10000000 : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    %4 = nvgpu.warpgroup.generate.descriptor %arg3, %1 : memref<128x64xf16, 3>, <tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x64xf16, 3>>
    %5 = nvgpu.warpgroup.generate.descriptor %arg4, %2 : memref<64x64xf16, 3>, <tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<64x64xf16, 3>>
    %6 = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x64xf32>>
    %7 = nvgpu.warpgroup.mma %4, %5, %6 waitGroup = 0 transposeB : <tensor = memref<128x64xf16, 3>>, <tensor = memref<64x64xf16, 3>>, <fragmented = vector<128x64xf32>> -> <fragmented = vector<128x64xf32>>
    nvgpu.warpgroup.mma.store %7, %arg5 : <fragmented = vector<128x64xf32>> to memref<128x64xf32>
    nvvm.wgmma.fence.aligned
    nvvm.wgmma.commit.group.sync.aligned
    nvvm.wgmma.wait.group.sync.aligned 0
    nvvm.fence.proxy <async.shared>, space = <cta>
    nvvm.fence.mbarrier.init
    nvvm.setmaxregister increase 240
    nvvm.cp.async.bulk.commit.group
    nvvm.cp.async.bulk.wait_group 0
    %c1_i32 = arith.constant 1 : i32
    %c256_i32 = arith.constant 256 : i32
    nvvm.barrier id = %c1_i32 number_of_threads = %c256_i32
    nvvm.barrier
    return
  }
}

"""

# A function with one value of each kind the ops take; the body starts on line 7.
HEAD = """\
!B = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
!D = !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!WA = !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>
!WB = !nvgpu.warpgroup.descriptor<tensor = memref<64x64xf16, 3>>
!Acc = !nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>>
func.func @f(%bar: !B, %d: !D, %wa: !WA, %wb: !WB, %acc: !Acc, %sm: memref<128x64xf16, 3>, %dyn: memref<?xi8, 3>, %i: index, %p: i1, %m: i16, %t: memref<*xf16>, %out: memref<128x64xf32>, %g: memref<64x64xf16>, %w: memref<32768xi8, 3>) {
"""


def _module(body: str) -> str:
    return HEAD + "".join(f"  {line}\n" for line in body.strip("\n").split("\n")) + "  return\n}\n"


def _ops(m) -> dict:
    return {op.name: op for op in m.walk()}


# -- text ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [HOPPER, IREE_OUT], ids=["spec-example", "iree-opt-output"])
def test_print_parse_print_is_a_fixpoint(text):
    m = air.parse(text)
    printed = str(m)
    again = air.parse(printed)
    assert str(again) == printed and air.structurally_equal(again, m)
    # printed in full: no elided nvgpu types, no aliases
    assert " <memorySpace" not in printed and " <tensor" not in printed and "!tmaA" not in printed
    assert "-> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>" in printed


def test_the_elided_form_gives_the_same_ir_as_the_full_one():
    assert air.structurally_equal(air.parse(IREE_OUT), air.parse(HOPPER))


def test_every_op_of_the_example_is_one_of_ours():
    names = {op.name for op in air.parse(HOPPER).walk()}
    for want in ("nvgpu.mbarrier.create", "nvgpu.mbarrier.init", "nvgpu.mbarrier.arrive", "nvgpu.mbarrier.arrive.expect_tx",
                 "nvgpu.mbarrier.try_wait.parity", "nvgpu.tma.create.descriptor", "nvgpu.tma.prefetch.descriptor",
                 "nvgpu.tma.async.load", "nvgpu.tma.async.store", "nvgpu.warpgroup.generate.descriptor",
                 "nvgpu.warpgroup.mma.init.accumulator", "nvgpu.warpgroup.mma", "nvgpu.warpgroup.mma.store",
                 "nvvm.wgmma.fence.aligned", "nvvm.wgmma.commit.group.sync.aligned",
                 "nvvm.wgmma.wait.group.sync.aligned", "nvvm.fence.proxy", "nvvm.fence.mbarrier.init",
                 "nvvm.setmaxregister", "nvvm.cp.async.bulk.commit.group", "nvvm.cp.async.bulk.wait_group",
                 "memref.view", "memref.cast"):
        assert want in names


def test_optional_parts_round_trip():
    text = _module("""
nvgpu.mbarrier.arrive.expect_tx %bar[%i], %i, predicate = %p : !B
nvgpu.tma.prefetch.descriptor %d, predicate = %p : !D
nvgpu.tma.async.load %d[%i, %i], %bar[%i] to %sm multicast_mask = %m, predicate = %p : !D, !B -> memref<128x64xf16, 3>
nvgpu.tma.async.load %d[%i, %i], %bar[%i] to %sm multicast_mask = %m : !D, !B -> memref<128x64xf16, 3>
nvgpu.tma.async.load %d[%i, %i], %bar[%i] to %sm, predicate = %p : !D, !B -> memref<128x64xf16, 3>
nvgpu.tma.async.store %sm to %d[%i, %i], predicate = %p : memref<128x64xf16, 3> -> !D
%r = nvgpu.warpgroup.mma %wa, %wb, %acc transposeB : !WA, !WB, !Acc -> !Acc
nvvm.fence.proxy <async>
nvvm.fence.proxy <async.global> {tag}
nvvm.setmaxregister decrease 40
nvvm.cp.async.bulk.wait_group 1 read
nvvm.wgmma.wait.group.sync.aligned {tag} 1""")
    m = air.parse(text)
    printed = str(m)
    assert str(air.parse(printed)) == printed and air.structurally_equal(air.parse(printed), m)
    for line in ("to %sm multicast_mask = %m, predicate = %p :", "to %sm multicast_mask = %m :", "to %sm, predicate = %p :",
                 "%d[%i, %i], predicate = %p : memref", "nvvm.fence.proxy <async.global> {tag}",
                 "nvvm.cp.async.bulk.wait_group 1 read\n", "nvvm.wgmma.wait.group.sync.aligned {tag} 1\n",
                 "nvvm.setmaxregister decrease 40\n", "%acc transposeB : !nvgpu"):
        assert line in printed
    loads = [op for op in m.walk() if isinstance(op, TmaAsyncLoadOp)]
    mask, pred = m.functions[0].args[9], m.functions[0].args[8]
    assert [(ld.multicast_mask, ld.predicate) for ld in loads] == [(mask, pred), (mask, None), (None, pred)]
    assert all(ld.dst is m.functions[0].args[5] and len(ld.coordinates) == 2 for ld in loads)
    mma = next(op for op in m.walk() if isinstance(op, WarpgroupMmaOp))
    assert mma.wait_group == 1 and mma.transpose_b and not mma.transpose_a  # waitGroup absent: 1


def test_warpgroup_mma_takes_keywords_or_a_dictionary():
    keywords = air.parse(_module("%r = nvgpu.warpgroup.mma %wa, %wb, %acc waitGroup = 0 transposeB : !WA, !WB, !Acc -> !Acc"))
    dictionary = air.parse(_module(
        "%r = nvgpu.warpgroup.mma %wa, %wb, %acc {waitGroup = 0 : i64, transposeB} : !WA, !WB, !Acc -> !Acc"))
    assert air.structurally_equal(keywords, dictionary) and str(keywords) == str(dictionary)
    assert "%acc waitGroup = 0 transposeB :" in str(dictionary)


def test_types_print_parse_and_intern():
    group = MBarrierGroupType(air.types.WORKGROUP, 4)
    assert str(group) == "!nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>"
    assert str(MBarrierGroupType(3)) == "!nvgpu.mbarrier.group<memorySpace = 3>"
    tmap = TensorMapDescriptorType(memref((128, 64), "f16", 3), "swizzle_128b")
    assert str(tmap) == ("!nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, "
                         "l2promo = none, oob = zero, interleave = none>")
    assert str(UnrankedMemRefType(air.types.f16, 3)) == "memref<*xf16, 3>"
    with pytest.raises(ValueError, match="unknown swizzle 'swizzle_256b'"):
        TensorMapDescriptorType(memref((8,), "f16", 3), "swizzle_256b")
    assert swizzle_bytes("swizzle_128b") == 128 and swizzle_bytes("none") is None
    m = air.parse("func.func private @f(!nvgpu.mbarrier.group<num_barriers = 4, memorySpace = #gpu.address_space<workgroup>>, "
                  "memref<* x f16, 3>, !nvgpu.mbarrier.group<memorySpace = 3 : i64>, !nvgpu.warpgroup.accumulator<"
                  "fragmented = vector<64x8xf32>>)")
    a, b, c, acc = m.functions[0].function_type.inputs
    assert a == group and b == UnrankedMemRefType(air.types.f16, 3) and c == MBarrierGroupType(3)
    assert acc == WarpgroupAccumulatorType(vector((64, 8), "f32"))


# -- type aliases ------------------------------------------------------------------------------------

def test_type_aliases_stand_for_their_type_and_print_in_full():
    m = air.parse("""!f = f32
!mem = memref<4x!f>
!unused = !nvgpu.mbarrier.token
func.func @f(%a: !mem, %i: index) -> !f {
  %x = memref.load %a[%i] : !mem
  return %x : !f
}
""")
    text = str(m)
    assert "memref<4xf32>" in text and "!mem" not in text and "!f" not in text
    assert air.structurally_equal(air.parse(text), m)


@pytest.mark.parametrize("text, line, col, message", [
    ("func.func private @f(!nope)\n", 1, 22, "undefined type alias '!nope'"),
    ("!a = f32\n!a = i32\nfunc.func private @f(!a)\n", 2, 1, "redefinition of type alias '!a'"),
    ("!my.t = f32\n", 1, 1, "type alias names may not contain '.'"),
    ("func.func private @f(f32)\n!a = f32\n", 2, 1, "type alias definitions must come before all operations"),
    ("func.func private @f(!nvgpu.bogus<1>)\n", 1, 22, "unknown type '!nvgpu.bogus'"),
    ("!a = 4\n", 1, 6, "expected type, found '4'"),
])
def test_type_alias_errors_are_located(text, line, col, message):
    with pytest.raises(ParseError) as e:
        air.parse(text, filename="k.mlir")
    assert message in e.value.message
    assert (e.value.location.line, e.value.location.col) == (line, col), str(e.value)


# -- parse errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, col, message", [
    ("%tk = nvgpu.mbarrier.arrive %bar[%i] : <memorySpace = 3> -> !nvgpu.mbarrier.token", 40,
     "type mismatch: %bar has type !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>, "
     "but the op expects !nvgpu.mbarrier.group<memorySpace = 3>"),
    ("%tk = nvgpu.mbarrier.arrive %bar[%i, %i] : !B -> !nvgpu.mbarrier.token", 31, "names one mbarrier of the group"),
    ("nvgpu.tma.prefetch.descriptor %d : memref<4xf32>", 38,
     "expected a !nvgpu.tensormap.descriptor type, found memref<4xf32>"),
    ("nvgpu.tma.async.load %d[%i, %i], %bar[%i] to %sm multicast_mask = %i : !D, !B -> memref<128x64xf16, 3>", 69,
     "'%i' has type index, expected i16"),
    ("%r = nvgpu.warpgroup.mma %wa, %wb, %acc transposeB : !WA, !WB, !Acc -> !WA", 74,
     "expected a !nvgpu.warpgroup.accumulator type, found !nvgpu.warpgroup.descriptor"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<64x64xf16, 3>, swizzle = swizzle_256b, l2promo = none, oob = zero, interleave = none>",
     112, "expected 'none' or 'swizzle_32b' or 'swizzle_64b' or 'swizzle_128b', found 'swizzle_256b'"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<64x64xf16, 3>, swizzle = none>",
     70, "!nvgpu.tensormap.descriptor is missing the parameters l2promo, oob, interleave"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<64x64xf16, 3>, swizzle = none, swizzle = none>",
     118, "parameter 'swizzle' of !nvgpu.tensormap.descriptor given twice"),
    ("%e = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 0>", 94,
     "expected a positive integer, found 0"),
    ("%e = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = memref<4xf32>>", 62,
     "expected a vector type (the M x N tile), found memref<4xf32>"),
    ("nvvm.setmaxregister up 240", 23, "expected 'increase' or 'decrease', found 'up'"),
    ("nvvm.fence.proxy <tensormap>", 21, "expected 'alias' or 'async' or 'async.global' or 'async.shared'"),
    ("%u = memref.cast %out : memref<128x64xf32> to memref<*xf16>", 49,
     "'memref.cast' supports only ranked -> unranked casts"),
    ("%u = memref.cast %g : memref<64x64xf16> to memref<?x64xf16>", 46,
     "'memref.cast' supports only ranked -> unranked casts"),
    ("%v = memref.view %w[%i, %i][] : memref<32768xi8, 3> to memref<8xf32, 3>", 3, "takes one byte shift"),
])
def test_parse_errors_are_located(line, col, message):
    with pytest.raises(ParseError) as e:
        air.parse(_module(line), filename="k.mlir")
    assert message in e.value.message
    assert (e.value.location.line, e.value.location.col) == (7, col), str(e.value)


# -- verifier refusals ---------------------------------------------------------------------------------

# (body, line of the refused op, message); every message starts with the op's name.
REFUSALS = [
    ("nvgpu.mbarrier.init %bar[%p], %i : !B", 7, "'nvgpu.mbarrier.init' op mbar_id must be an index, got i1"),
    ("%c5 = arith.constant 5 : index\nnvgpu.mbarrier.init %bar[%c5], %i : !B", 8,
     "'nvgpu.mbarrier.init' op mbar_id 5 is outside the group of 2 mbarriers"),
    ("nvgpu.mbarrier.init %bar[%i], %i, predicate = %i : !B", 7, "'nvgpu.mbarrier.init' op predicate must be i1, got index"),
    ("nvgpu.mbarrier.init %bar[%i], %p : !B", 7, "'nvgpu.mbarrier.init' op count must be index, got i1"),
    ("nvgpu.mbarrier.try_wait.parity %bar[%i], %i, %i : !B", 7,
     "'nvgpu.mbarrier.try_wait.parity' op parity must be i1, got index"),
    ("nvgpu.mbarrier.arrive.expect_tx %bar[%i], %p : !B", 7,
     "'nvgpu.mbarrier.arrive.expect_tx' op txcount must be index, got i1"),
    ("%e = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<global>>", 7,
     "'nvgpu.mbarrier.create' op mbarriers live in shared memory"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i] : memref<*xf16> -> !D", 7,
     "'nvgpu.tma.create.descriptor' op needs one box size per dimension of memref<128x64xf16, 3> (2), got 1"),
    ("%e = nvgpu.tma.create.descriptor %sm box[%i, %i] : memref<128x64xf16, 3> -> !D", 7,
     "'nvgpu.tma.create.descriptor' op the tensor must be an unranked memref (memref.cast it)"),
    ("%c64 = arith.constant 64 : index\n%e = nvgpu.tma.create.descriptor %t box[%c64, %c64] : memref<*xf16> -> !D", 8,
     "'nvgpu.tma.create.descriptor' op box dimension 0 is 64, but the descriptor's box memref<128x64xf16, 3> has 128"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<300x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>",
     7, "'nvgpu.tma.create.descriptor' op box dimension 0 of memref<300x64xf16, 3> is 300: each must be 1 to 256"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<64x128xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>",
     7, "'nvgpu.tma.create.descriptor' op the last box dimension of memref<64x128xf16, 3> is 256 bytes: more than the "
        "128-byte span of swizzle_128b"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<64x4xf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>",
     7, "the last box dimension of memref<64x4xf16, 3> is 8 bytes: it must be a multiple of 16"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<64x64xf16>, swizzle = none, l2promo = none, oob = zero, interleave = none>",
     7, "the tensor map's box must be in shared memory (address space 3 or workgroup), got memref<64x64xf16>"),
    ("nvgpu.tma.async.load %d[%i], %bar[%i] to %sm : !D, !B -> memref<128x64xf16, 3>", 7,
     "'nvgpu.tma.async.load' op needs 2 index coordinates (innermost first) for the box memref<128x64xf16, 3>, got 1"),
    ("%s2 = memref.alloca() : memref<64x128xf16, 3>\nnvgpu.tma.async.load %d[%i, %i], %bar[%i] to %s2 : !D, !B -> memref<64x128xf16, 3>",
     8, "'nvgpu.tma.async.load' op the destination type memref<64x128xf16, 3> must be the tensor map's box type "
        "memref<128x64xf16, 3>"),
    ("%c16 = arith.constant 16 : index\n%v = memref.view %w[%c16][] : memref<32768xi8, 3> to memref<128x64xf16, 3>\n"
     "nvgpu.tma.async.load %d[%i, %i], %bar[%i] to %v : !D, !B -> memref<128x64xf16, 3>", 9,
     "'nvgpu.tma.async.load' op the destination starts at byte 16 of its buffer: swizzle_128b needs a 1024-byte aligned "
     "start"),
    ("%s2 = memref.alloca() : memref<64x128xf16, 3>\nnvgpu.tma.async.store %s2 to %d[%i, %i] : memref<64x128xf16, 3> -> !D",
     8, "'nvgpu.tma.async.store' op the source type memref<64x128xf16, 3> must be the tensor map's box type"),
    ("%x = nvgpu.warpgroup.generate.descriptor %sm, %d : memref<128x64xf16, 3>, !D -> <tensor = memref<64x64xf16, 3>>", 7,
     "'nvgpu.warpgroup.generate.descriptor' op the result must be !nvgpu.warpgroup.descriptor<tensor = "
     "memref<128x64xf16, 3>>"),
    ("%e = nvgpu.tma.create.descriptor %t box[%i, %i] : memref<*xf16> -> <tensor = memref<128x32xf16, 3>, swizzle = swizzle_64b, l2promo = none, oob = zero, interleave = none>\n"
     "%s2 = memref.alloca() : memref<128x32xf16, 3>\n"
     "%x = nvgpu.warpgroup.generate.descriptor %s2, %e : memref<128x32xf16, 3>, <tensor = memref<128x32xf16, 3>, swizzle = swizzle_64b, l2promo = none, oob = zero, interleave = none> -> <tensor = memref<128x32xf16, 3>>",
     9, "'nvgpu.warpgroup.generate.descriptor' op supports tensor maps with swizzle = swizzle_128b and interleave = none "
        "only (swizzle = swizzle_64b, interleave = none is not supported yet)"),
    ("%x = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<100x64xf32>>", 7,
     "'nvgpu.warpgroup.mma.init.accumulator' op the result has M = 100: it must be a multiple of 64"),
    ("%x = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x12xf32>>", 7,
     "the result has N = 12: it must be a multiple of 8 from 8 to 256"),
    ("%x = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x264xf32>>", 7,
     "the result has N = 264: it must be a multiple of 8 from 8 to 256"),
    ("%x = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x64xf16>>", 7,
     "f32 accumulators only, for now (f16 is not supported yet)"),
    ("%r = nvgpu.warpgroup.mma %wb, %wa, %acc transposeA transposeB : !WB, !WA, !Acc -> !Acc", 7,
     "'nvgpu.warpgroup.mma' op A (memref<64x64xf16, 3>: M x K) and B (memref<128x64xf16, 3>: K x N) differ in K: 64 "
     "and 128"),
    # B's descriptor is of the logical K x N tile (upstream's), whatever transposeB says of its layout
    ("%r = nvgpu.warpgroup.mma %wa, %wa, %acc transposeB : !WA, !WA, !Acc -> !Acc", 7,
     "'nvgpu.warpgroup.mma' op A (memref<128x64xf16, 3>: M x K) and B (memref<128x64xf16, 3>: K x N) differ in K: 64 "
     "and 128"),
    ("%x = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x32xf32>>\n"
     "%r = nvgpu.warpgroup.mma %wa, %wb, %x transposeB : !WA, !WB, <fragmented = vector<128x32xf32>> -> <fragmented = vector<128x32xf32>>",
     8, "must be M x N = 128 x 64"),
    ("nvgpu.warpgroup.mma.store %acc, %sm : !Acc to memref<128x64xf16, 3>", 7,
     "'nvgpu.warpgroup.mma.store' op the destination's element type must be the accumulator's f32, got f16 (converting "
     "stores are not supported yet)"),
    ("nvgpu.warpgroup.mma.store %acc, %dyn : !Acc to memref<?xi8, 3>", 7,
     "'nvgpu.warpgroup.mma.store' op the destination must be a 128x64 memref (the accumulator's M x N)"),
    ("nvvm.setmaxregister increase 20", 7, "'nvvm.setmaxregister' op the register count must be a multiple of 8 from 24 to "
     "256, got 20"),
    ("nvvm.setmaxregister decrease 241", 7, "multiple of 8 from 24 to 256, got 241"),
    ("nvvm.setmaxregister increase 264", 7, "multiple of 8 from 24 to 256, got 264"),
    ("nvvm.fence.proxy <async.shared>", 7, "'nvvm.fence.proxy' op an async.shared fence needs 'space = <cta>'"),
    ("nvvm.fence.proxy <async>, space = <cta>", 7, "'nvvm.fence.proxy' op only an async.shared fence takes a space"),
    ("%v = memref.view %dyn[%i][] : memref<?xi8, 3> to memref<128x64xf16>", 7,
     "'memref.view' op the source and the view must be in one memory space, got memref<?xi8, 3> and memref<128x64xf16>"),
    ("%v = memref.view %dyn[%i][] : memref<?xi8, 3> to memref<?x64xf16, 3>", 7,
     "'memref.view' op needs one index size per dynamic dimension of memref<?x64xf16, 3> (1), got 0"),
    ("%v = memref.view %dyn[%p][] : memref<?xi8, 3> to memref<128x64xf16, 3>", 7,
     "'memref.view' op the byte shift must be an index, got i1"),
    ("%v = memref.view %sm[%i][] : memref<128x64xf16, 3> to memref<128x64xf16, 3>", 7,
     "'memref.view' op the source must be a 1-D memref of i8 (bytes) with identity layout, got memref<128x64xf16, 3>"),
    ("%c4000 = arith.constant 4000 : index\n%b = memref.alloca() : memref<4096xi8, 3>\n"
     "%v = memref.view %b[%c4000][] : memref<4096xi8, 3> to memref<64xf32, 3>", 9,
     "'memref.view' op the view of 256 bytes at byte 4000 runs past the end of the 4096-byte buffer"),
]


@pytest.mark.parametrize("body, line, message", REFUSALS, ids=[r[2][:60] for r in REFUSALS])
def test_verifier_refusals_name_the_op_and_its_location(body, line, message):
    with pytest.raises(VerifyError) as e:
        air.parse(_module(body), filename="k.mlir")
    assert message in e.value.message
    assert e.value.message.startswith("'") and " op " in e.value.message
    assert (e.value.location.file, e.value.location.line, e.value.location.col) == ("k.mlir", line, 3), str(e.value)


def test_k_other_than_64_is_not_supported_yet():
    a = air.types.WarpgroupDescriptorType(memref((128, 32), "f16", 3))
    b = air.types.WarpgroupDescriptorType(memref((32, 64), "f16", 3))
    acc = WarpgroupAccumulatorType(vector((128, 64), "f32"))
    from affine_ir.dialects.func import FuncOp

    f = FuncOp("f", air.types.FunctionType((a, b, acc), ()))
    op = WarpgroupMmaOp(*f.args, wait_group=0, transpose_b=True)
    with pytest.raises(VerifyError, match="supports K = 64 \\(128-byte rows of f16\\) only, got K = 32"):
        op.verify_()
    bad_b = air.types.WarpgroupDescriptorType(memref((64, 64), "f16", 3))
    f2 = FuncOp("g", air.types.FunctionType((a, bad_b, acc), ()))
    with pytest.raises(VerifyError, match="differ in K: 32 and 64"):
        WarpgroupMmaOp(*f2.args, transpose_b=True).verify_()


def test_refusals_of_built_ops():
    """What the parser cannot produce but a builder can: wrong operand types, an unsupported cast."""
    m = air.parse(_module("%c0 = arith.constant 0 : index"))
    args = {a.name_hint: a for a in m.functions[0].args}
    with pytest.raises(VerifyError, match="'nvgpu.tma.async.load' op multicast_mask must be i16, got i1"):
        TmaAsyncLoadOp(args["d"], [args["i"]] * 2, args["bar"], args["i"], args["sm"], args["p"], args["p"]).verify_()
    with pytest.raises(VerifyError, match="'memref.cast' op supports only ranked -> unranked casts"):
        CastOp(args["g"], memref((None, 64), "f16")).verify_()
    with pytest.raises(VerifyError, match="'nvvm.fence.proxy' op kind must be one of"):
        FenceProxyOp("tensormap").verify_()
    with pytest.raises(VerifyError, match="action must be increase or decrease"):
        SetMaxRegisterOp("up", 240).verify_()
    with pytest.raises(VerifyError, match="'nvgpu.mbarrier.create' op the result must be an !nvgpu.mbarrier.group"):
        MBarrierCreateOp(index).verify_()


# -- builders and properties ----------------------------------------------------------------------------

def test_built_ops_split_their_operands_and_clone():
    m = air.parse(_module("%c0 = arith.constant 0 : index"))
    args = {a.name_hint: a for a in m.functions[0].args}
    body = m.functions[0].body
    load = TmaAsyncLoadOp(args["d"], [args["i"], args["i"]], args["bar"], args["i"], args["sm"], args["m"], args["p"])
    store = TmaAsyncStoreOp(args["sm"], args["d"], [args["i"], args["i"]], args["p"])
    view = ViewOp(args["w"], args["i"], [], memref((128, 64), "f16", 3))
    for op in (load, store, view):
        body.insert(len(body.ops) - 1, op)
    air.verify(m)
    assert (load.multicast_mask, load.predicate, load.dst, load.barriers) == (args["m"], args["p"], args["sm"], args["bar"])
    assert store.coordinates == (args["i"], args["i"]) and store.predicate is args["p"]
    copy = load.clone()
    assert copy.multicast_mask is args["m"] and copy.coordinates == load.coordinates
    text = str(m)
    assert "to %sm multicast_mask = %m, predicate = %p :" in text
    assert air.structurally_equal(air.parse(text), m)


# -- traits and effects ------------------------------------------------------------------------------------

def test_traits_and_effects():
    m = air.parse(HOPPER)
    f = m.functions[0]
    a, g, dyn, sm_a, sm_b, out = f.args
    ops = _ops(m)
    collective = {n for n, op in ops.items() if op.has_trait(WarpgroupCollective)}
    assert collective == {"nvgpu.warpgroup.mma", "nvgpu.warpgroup.mma.store", "nvvm.wgmma.fence.aligned",
                          "nvvm.wgmma.commit.group.sync.aligned", "nvvm.wgmma.wait.group.sync.aligned",
                          "nvvm.setmaxregister"}
    assert not any(op.has_trait(SubgroupCollective) for op in ops.values() if op.name.startswith(("nvgpu.", "nvvm.")))

    def effects(name):
        e = ops[name].memory_effects()
        return None if e is None else [(x.kind, x.value) for x in e]

    create = ops["nvgpu.mbarrier.create"]
    assert effects("nvgpu.mbarrier.create") == [(EffectKind.ALLOCATE, create.result)]
    for name in ("nvgpu.mbarrier.init", "nvgpu.mbarrier.arrive", "nvgpu.mbarrier.arrive.expect_tx",
                 "nvgpu.mbarrier.try_wait.parity", "nvgpu.tma.prefetch.descriptor", "nvvm.wgmma.fence.aligned",
                 "nvvm.wgmma.commit.group.sync.aligned", "nvvm.wgmma.wait.group.sync.aligned", "nvvm.fence.proxy",
                 "nvvm.fence.mbarrier.init", "nvvm.setmaxregister", "nvvm.cp.async.bulk.commit.group",
                 "nvvm.cp.async.bulk.wait_group"):
        assert effects(name) is None, name  # unknown: acts on barriers or asynchronous state
    assert effects("nvgpu.tma.async.load") == [(EffectKind.WRITE, sm_a), (EffectKind.READ, None), (EffectKind.WRITE, None)]
    assert effects("nvgpu.tma.async.store") == [(EffectKind.READ, sm_a), (EffectKind.WRITE, None)]
    assert effects("nvgpu.warpgroup.generate.descriptor") == [(EffectKind.READ, sm_b)]  # the last one: %wB
    assert effects("nvgpu.warpgroup.mma") == [(EffectKind.READ, None), (EffectKind.WRITE, None)]
    assert effects("nvgpu.warpgroup.mma.store") == [(EffectKind.WRITE, out)]
    assert effects("nvgpu.tma.create.descriptor") == [] and not ops["nvgpu.tma.create.descriptor"].is_speculatable()
    for name in ("nvgpu.warpgroup.mma.init.accumulator", "memref.view", "memref.cast"):
        assert ops[name].has_trait(Pure), name
    assert ops["memref.view"].has_trait(ViewLike) and ops["memref.cast"].has_trait(ViewLike)
    assert view_source(ops["memref.view"].result) is dyn and view_source(ops["memref.cast"].result) is g
    assert view_source(sm_a) is sm_a
    # an unused token still arrives; an unused view, cast or zero accumulator is dead
    assert not would_be_trivially_dead(ops["nvgpu.mbarrier.arrive"])
    assert is_trivially_dead(ops["memref.view"]) and is_trivially_dead(ops["memref.cast"])


def test_dce_keeps_what_acts_on_barriers_or_asynchronous_state():
    m = air.parse(HOPPER + """
func.func @dead(%sm: memref<128x64xf16, 3>) {
  %acc = nvgpu.warpgroup.mma.init.accumulator -> !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>
  %bar = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
  return
}
""")
    before = [op.name for op in m.functions[0].walk()]
    for pipeline in ("dce", "canonicalize", "cse"):
        out = PassManager.parse(pipeline).run(m)
        after = [op.name for op in out.functions[0].walk()]
        gone = [n for n in before if n not in after]
        assert gone == ["memref.cast", "memref.view"], (pipeline, gone)  # unused and pure
        assert after.count("nvgpu.mbarrier.init") == 2 and "nvgpu.mbarrier.arrive" in after
        assert [op.name for op in out.functions[1].walk()] == ["func.func", "func.return"], pipeline


def test_licm_moves_nothing_across_a_tma_load_or_a_wait():
    m = air.parse(HEAD + """  %c0 = arith.constant 0 : index
  %f = arith.constant false
  affine.for %k = 0 to 4 {
    nvgpu.tma.async.load %d[%k, %c0], %bar[%c0] to %sm : !D, !B -> memref<128x64xf16, 3>
    nvgpu.mbarrier.try_wait.parity %bar[%c0], %f, %i : !B
    %x = affine.load %sm[0, 0] : memref<128x64xf16, 3>
    %acc0 = nvgpu.warpgroup.mma.init.accumulator -> !Acc
    nvgpu.warpgroup.mma.store %acc0, %out : !Acc to memref<128x64xf32>
  }
  return
}
""")
    out = PassManager.parse("affine-loop-invariant-code-motion").run(m)
    loop = next(op for op in out.walk() if op.name == "affine.for")
    inside = [op.name for op in loop.body.ops]
    assert "affine.load" in inside and "nvgpu.tma.async.load" in inside and "nvgpu.warpgroup.mma.store" in inside
    assert "nvgpu.warpgroup.mma.init.accumulator" not in inside  # pure: hoisted


# -- upstream MLIR ------------------------------------------------------------------------------------------

@needs_iree
def test_mlir_parses_our_printing_and_we_parse_mlirs():
    ours = air.parse(HOPPER)
    proc = subprocess.run([IREE_OPT, "-"], input=str(ours), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    theirs = air.parse(proc.stdout)
    assert air.structurally_equal(theirs, ours)
    assert " <memorySpace" in proc.stdout  # MLIR printed the elided form, which we read
