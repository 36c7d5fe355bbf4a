"""Memref dims beyond int64 (MLIR: "invalid dimension") and memref types whose size in bytes
overflows int64 (our backends compute sizes in int64, where it would wrap into a heap overflow)
are refused by the parser and by the verifier, at their place."""

from __future__ import annotations

import pytest

import affine_ir as air
from affine_ir.dialects import func
from affine_ir.dialects import memref as memref_d
from affine_ir.dialects.builtin import ModuleOp
from affine_ir.errors import Location
from affine_ir.types import FunctionType, f32, i8, memref

HUGE = """func.func @f(%S: memref<1xf32>) {
  %t = memref.alloc() : memref<SHAPExf32>
  return
}"""


@pytest.mark.parametrize("shape, phrase", [
    ("1180591620717411303424", "invalid dimension"),  # 2**70
    ("9223372036854775808", "invalid dimension"),  # 2**63
    ("4611686018427387904x4", "more than int64 can address"),  # 2**64 elements
    ("9223372036854775807", "more than int64 can address"),  # 2**63 - 1 elements of 4 bytes
    ("4x" + "9" * 5000, "invalid dimension"),  # past Python's int/str digit limit
])
def test_parser_refuses_memref_types_beyond_int64(shape, phrase):
    with pytest.raises(air.ParseError) as info:
        air.parse(HUGE.replace("SHAPE", shape), "huge.mlir")
    err = info.value
    assert phrase in err.message and (err.location.file, err.location.line, err.location.col) == ("huge.mlir", 2, 32)


def test_largest_addressable_memref_is_accepted():
    m = air.parse(HUGE.replace("SHAPE", "2305843009213693951").replace("alloc()", "alloc()"))
    assert "2305843009213693951xf32" in str(m)
    air.parse("func.func @f(%A: memref<9223372036854775807xi8>) {\n  return\n}")


def test_verifier_refuses_an_api_built_memref_beyond_int64():
    f = func.FuncOp("f", FunctionType((), ()))
    ModuleOp([f])
    here = Location("api.py", 3, 1)
    f.body.append(memref_d.AllocOp(memref((1 << 62, 4), f32), location=here))
    f.body.append(func.ReturnOp())
    with pytest.raises(air.VerifyError) as info:
        air.verify(f.parent_op)
    assert info.value.location == here and "'memref.alloc' op result #0" in info.value.message
    assert "more than int64 can address" in info.value.message


def test_verifier_refuses_a_function_argument_beyond_int64():
    f = func.FuncOp("f", FunctionType((memref((1 << 63,), i8),), ()), arg_names=["A"])
    ModuleOp([f])
    f.body.append(func.ReturnOp())
    with pytest.raises(air.VerifyError) as info:
        air.verify(f.parent_op)
    assert "'func.func' op region argument #0 (%A): invalid dimension" in info.value.message
