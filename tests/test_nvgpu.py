"""The ``nvgpu`` ops and ``gpu.subgroup_mma_elementwise`` as IR: both spellings parse (upstream's
keyword form and the older attribute dictionary), bad ones are located ParseErrors/VerifyErrors
naming the op, and the declared traits and effects are what passes see."""

from __future__ import annotations

import pytest

import affine_ir as air
from affine_ir import ParseError, VerifyError
from affine_ir.traits import EffectKind, SubgroupCollective, is_trivially_dead, would_be_trivially_dead

ARGS = ("%sm: memref<16x16xf16, 3>, %g: memref<16x16xf16>, %i: index, %a: vector<4x2xf16>, %b: vector<2x2xf16>, "
        "%c: vector<2x2xf32>, %f: vector<4x1xf32>, %fb: vector<2x1xf32>, %m: !gpu.mma_matrix<16x16xf16, \"COp\">")


def _func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{body}\n  return\n}}\n"


def test_old_and_new_spellings_give_one_op():
    old = _func("""  %l = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 4
      : i32, transpose = false} : memref<16x16xf16, 3> -> vector<4x2xf16>
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]}
      : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  %t = nvgpu.device_async_copy %g[%i, %i], %sm[%i, %i], 8 {bypassL1} : memref<16x16xf16> to memref<16x16xf16, 3>
  %gr = nvgpu.device_async_create_group %t
  nvgpu.device_async_wait %gr {numGroups = 1 : i32}""")
    new = str(air.parse(old))
    assert "numTiles = 4 transpose = false :" in new and "mmaShape = [16, 8, 16] :" in new
    assert ", 8 bypassL1 :" in new and "nvgpu.device_async_wait %gr numGroups = 1\n" in new
    assert air.structurally_equal(air.parse(new), air.parse(old)) and str(air.parse(new)) == new


@pytest.mark.parametrize("line, col, message", [
    ("  %l = nvgpu.ldmatrix %sm[%i, %i] numTiles = 4 transpose = false : memref<16x16xf16, 3> -> f16", 66,
     "expected a vector result type"),
    ("  %l = nvgpu.ldmatrix %sm[%i, %i] transpose = false : memref<16x16xf16, 3> -> vector<4x2xf16>", 3,
     "needs 'numTiles = <1, 2 or 4>'"),
    ("  %d = nvgpu.mma.sync(%a, %b) mmaShape = [16, 8, 16] : (vector<4x2xf16>, vector<2x2xf16>) -> vector<2x2xf32>", 3,
     "takes 3 operands"),
    ("  %d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16] : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) "
     "-> vector<2x2xf16>", 115, "result type vector<2x2xf16> must be the accumulator's type"),
    ("  %e = gpu.subgroup_mma_elementwise bogus %m : (!gpu.mma_matrix<16x16xf16, \"COp\">) -> "
     "!gpu.mma_matrix<16x16xf16, \"COp\">", 37, "unknown element-wise kind 'bogus'"),
    ("  %x = vector.extract %c[2, 0] : f32 from vector<2x2xf32>", 32, "out of bounds"),
    ("  %x = vector.extract_strided_slice %a offsets = [3], sizes = [2], strides = [1] : vector<4x2xf16> to "
     "vector<2x2xf16>", 82, "out of bounds"),
    ("  %x = vector.extract_strided_slice %a {offsets = [0], sizes = [2], strides = [2]} : vector<4x2xf16> to "
     "vector<2x2xf16>", 84, "only unit strides"),
    ("  %x = vector.extract_strided_slice %a {offsets = [0], sizes = [2], strides = [1]} : vector<4x2xf16> to "
     "vector<2x1xf16>", 84, "is a vector<2x2xf16>, not vector<2x1xf16>"),
    ("  %x = vector.extract_strided_slice %a {offsets = [0]} : vector<4x2xf16> to vector<2x2xf16>", 40,
     "needs 'offsets', 'sizes' and 'strides'"),
    ("  nvgpu.device_async_wait %i", 27, "has type index, expected !nvgpu.device.async.token"),
])
def test_parse_errors_are_located(line, col, message):
    with pytest.raises(ParseError) as e:
        air.parse(_func(line), filename="k.mlir")
    assert message in e.value.message
    assert (e.value.location.line, e.value.location.col) == (2, col), str(e.value)


@pytest.mark.parametrize("line, message", [
    ("%l = nvgpu.ldmatrix %g[%i, %i] numTiles = 4 transpose = false : memref<16x16xf16> -> vector<4x2xf16>",
     "'nvgpu.ldmatrix' op expects a memref in shared memory"),
    ("%l = nvgpu.ldmatrix %sm[%i, %i] numTiles = 4 transpose = false : memref<16x16xf16, 3> -> vector<2x2xf16>",
     "numTiles = 4 of f16 gives vector<4x2xf16>, got vector<2x2xf16>"),
    ("%l = nvgpu.ldmatrix %sm[%i, %i] numTiles = 3 transpose = false : memref<16x16xf16, 3> -> vector<3x2xf16>",
     "numTiles must be 1, 2 or 4"),
    ("%d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 32] : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) "
     "-> vector<2x2xf32>", "mmaShape must be [16, 8, k] with k in (8, 16) for f16 inputs"),
    ("%d = nvgpu.mma.sync(%b, %b, %c) mmaShape = [16, 8, 16] : (vector<2x2xf16>, vector<2x2xf16>, vector<2x2xf32>) "
     "-> vector<2x2xf32>", "the A fragment of m16n8k16 on f16 must be vector<4x2xf16>"),
    ("%d = nvgpu.mma.sync(%f, %fb, %c) mmaShape = [16, 8, 8] : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) "
     "-> vector<2x2xf32>", "f32 inputs need 'tf32Enabled'"),
    ("%t = nvgpu.device_async_copy %g[%i, %i], %sm[%i, %i], 4 bypassL1 : memref<16x16xf16> to memref<16x16xf16, 3>",
     "bypassL1 needs a 16-byte copy, got 8 bytes"),
    ("%t = nvgpu.device_async_copy %g[%i, %i], %sm[%i, %i], 3 : memref<16x16xf16> to memref<16x16xf16, 3>",
     "copies 4, 8 or 16 bytes, got 3 x f16 = 6 bytes"),
    ("%t = nvgpu.device_async_copy %sm[%i, %i], %g[%i, %i], 4 : memref<16x16xf16, 3> to memref<16x16xf16>",
     "the destination must be in shared memory"),
    ("%e = gpu.subgroup_mma_elementwise addi %m, %m : (!gpu.mma_matrix<16x16xf16, \"COp\">, "
     "!gpu.mma_matrix<16x16xf16, \"COp\">) -> !gpu.mma_matrix<16x16xf16, \"COp\">", "'addi' expects int elements"),
    ("%e = gpu.subgroup_mma_elementwise negatef %m, %m : (!gpu.mma_matrix<16x16xf16, \"COp\">, "
     "!gpu.mma_matrix<16x16xf16, \"COp\">) -> !gpu.mma_matrix<16x16xf16, \"COp\">", "'negatef' takes 1 operand"),
    ("%e = gpu.subgroup_mma_elementwise extf %m : (!gpu.mma_matrix<16x16xf16, \"COp\">) -> "
     "!gpu.mma_matrix<16x16xf16, \"COp\">", "'extf' must widen the element type"),
])
def test_verifier_refusals_name_the_op_and_its_location(line, message):
    with pytest.raises((VerifyError, ParseError)) as e:
        air.parse(_func("  " + line), filename="k.mlir")
    assert message in e.value.message
    assert e.value.location is not None and e.value.location.line == 2


def test_wait_and_group_need_the_right_tokens():
    text = _func("""  %t = nvgpu.device_async_copy %g[%i, %i], %sm[%i, %i], 8
      : memref<16x16xf16> to memref<16x16xf16, 3>
  nvgpu.device_async_wait %t""")
    with pytest.raises((VerifyError, ParseError), match="waits on one token of an 'nvgpu.device_async_create_group'"):
        air.parse(text)
    text = _func("""  %t = nvgpu.device_async_copy %g[%i, %i], %sm[%i, %i], 8
      : memref<16x16xf16> to memref<16x16xf16, 3>
  %g1 = nvgpu.device_async_create_group %t
  %g2 = nvgpu.device_async_create_group %g1""")
    with pytest.raises((VerifyError, ParseError), match="must be the token of an 'nvgpu.device_async_copy'"):
        air.parse(text)


def test_traits_and_effects():
    m = air.parse(_func("""  %l = nvgpu.ldmatrix %sm[%i, %i] numTiles = 4 transpose = false
      : memref<16x16xf16, 3> -> vector<4x2xf16>
  %d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16]
      : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  %t = nvgpu.device_async_copy %g[%i, %i], %sm[%i, %i], 8 : memref<16x16xf16> to memref<16x16xf16, 3>
  %gr = nvgpu.device_async_create_group %t
  nvgpu.device_async_wait %gr
  %e = gpu.subgroup_mma_elementwise addf %m, %m
      : (!gpu.mma_matrix<16x16xf16, "COp">, !gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">"""))
    ops = {op.name: op for op in m.walk()}
    f = m.functions[0]
    sm, g = f.args[0], f.args[1]
    ld, mma, cp, grp, wait, ew = (ops[n] for n in ("nvgpu.ldmatrix", "nvgpu.mma.sync", "nvgpu.device_async_copy",
                                                   "nvgpu.device_async_create_group", "nvgpu.device_async_wait",
                                                   "gpu.subgroup_mma_elementwise"))
    assert [(e.kind, e.value) for e in ld.memory_effects()] == [(EffectKind.READ, sm)]
    assert [(e.kind, e.value) for e in cp.memory_effects()] == [(EffectKind.READ, g), (EffectKind.WRITE, sm)]
    assert mma.memory_effects() == () and ew.memory_effects() == ()
    assert grp.memory_effects() is None and wait.memory_effects() is None  # nothing moves across them
    assert ld.has_trait(SubgroupCollective) and mma.has_trait(SubgroupCollective)
    assert not ew.has_trait(SubgroupCollective)
    assert is_trivially_dead(mma) and is_trivially_dead(ld) and is_trivially_dead(ew)  # unused results: DCE erases
    assert not would_be_trivially_dead(cp) and not would_be_trivially_dead(grp)  # an unused token still copies
