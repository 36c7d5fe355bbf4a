"""Integer types wider than Python's int<->str digit limit (4300 digits, about 14k bits): every
path (parse, print, interpret, canonicalize, affine-opt) works; MLIR allows up to 2**24 - 1 bits."""

from __future__ import annotations

import numpy as np
import pytest

import affine_ir as air
import transforms
from affine_ir.bigint import decimal_to_int, describe_int, int_to_decimal
from runtime.cli import affine_opt_main

BIG = 7**9000  # 25267 bits, 7607 digits: past the limit

PROGRAM = f"""func.func @f(%S: memref<2xi64>) {{
  %a = arith.constant {int_to_decimal(BIG)} : i30000
  %b = arith.constant 3 : i30000
  %p = arith.muli %a, %b : i30000
  %q = arith.addi %p, %a : i30000
  %c = arith.trunci %q : i30000 to i64
  %c0 = arith.constant 0 : index
  affine.store %c, %S[%c0] : memref<2xi64>
  %w = arith.muli %a, %a : i30000
  %d = arith.trunci %w : i30000 to i64
  affine.store %d, %S[1] : memref<2xi64>
  return
}}"""


def _signed64(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def _expected() -> list[int]:
    square = (BIG * BIG + 2**29999) % 2**30000 - 2**29999  # wraps at 30000 bits
    return [_signed64(4 * BIG), _signed64(square)]


@pytest.mark.parametrize("x", [0, 5, -5, 10**650 + 7, -(10**5000) - 3, BIG, -BIG * BIG],
                         ids=["0", "5", "-5", "651 digits", "-5001 digits", "7**9000", "-7**18000"])
def test_decimal_text_of_any_size(x):
    text = int_to_decimal(x)
    assert decimal_to_int(text) == x
    assert x == 0 or text.lstrip("-")[0] != "0"
    assert len(describe_int(x)) < 60


def test_wide_constants_parse_print_and_round_trip():
    m = air.parse(PROGRAM)
    text = str(m)
    assert int_to_decimal(BIG) in text
    assert str(air.parse(text)) == text


def test_wide_integers_interpret_and_canonicalize():
    m = air.parse(PROGRAM)
    S = np.zeros(2, np.int64)
    air.interpret(m, S)
    assert list(S) == _expected()
    out = transforms.PassManager.parse("canonicalize").run(m)
    assert "i30000" not in str(out)  # folded to the i64 results
    S = np.zeros(2, np.int64)
    air.interpret(out, S)
    assert list(S) == _expected()


def test_affine_opt_prints_and_canonicalizes_wide_integers(tmp_path, capsys):
    path = tmp_path / "wide.mlir"
    path.write_text(PROGRAM)
    for args in ([], ["-canonicalize"]):
        code = affine_opt_main([str(path), *args])
        out, err = capsys.readouterr()
        assert code == 0 and err == "" and "func.func @f" in out, err


def test_out_of_range_wide_constant_is_a_located_error():
    with pytest.raises(air.ParseError) as info:
        air.parse(PROGRAM.replace(": i30000\n  %b", ": i100\n  %b", 1), "w.mlir")
    assert "integer constant <a 25267-bit integer> out of range for i100" in info.value.formatted()
    assert "w.mlir:2:" in info.value.formatted()


def test_huge_python_int_argument_is_a_clear_error():
    m = air.parse("func.func @f(%n: i32) -> i32 {\n  return %n : i32\n}")
    with pytest.raises(air.InterpretError) as info:
        air.interpret(m, 10**5000)
    assert "argument #0 (%n): <a 16610-bit integer> does not fit in i32" in info.value.message
