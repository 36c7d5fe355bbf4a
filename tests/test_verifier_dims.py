"""MLIR's rules for valid affine dims and symbols (``isValidDim``/``isValidSymbol``): each case's
verdict is the one ``iree-opt`` (MLIR, LLVM 24) gives, with its message."""

from __future__ import annotations

import pytest

import affine_ir as air

DIM = "operand cannot be used as a dimension id"
SYM = "operand cannot be used as a symbol"


def _func(body: str, args: str = "%A: memref<10xf32>, %n: index") -> str:
    return f"func.func @f({args}) {{\n{body}\n  return\n}}\n"


def _loop(body: str) -> str:
    return f"  affine.for %i = 0 to 10 {{\n{body}\n  }}"


CASES = [
    # (name, function text, None if valid else (message, line))
    ("addi of an IV as a load subscript",
     _func(_loop("    %j = arith.addi %i, %n : index\n    %v = affine.load %A[%j] : memref<10xf32>")),
     ("'affine.load' op " + DIM, 4)),
    ("addi of symbols is a symbol",
     _func(_loop("    %j = arith.addi %n, %n : index\n    %v = affine.load %A[%j] : memref<10xf32>\n"
                 "    affine.for %k = 0 to %j {\n    }")), None),
    ("addi of an IV as an affine.parallel bound",
     _func(_loop("    %j = arith.addi %i, %n : index\n    affine.parallel (%k) = (0) to (%j) {\n    }")),
     ("'affine.parallel' op " + DIM, 4)),
    ("affine.min of an IV is not a dim",
     _func(_loop("    %j = affine.min affine_map<(d0) -> (d0, 5)>(%i)\n    %v = affine.load %A[%j] : memref<10xf32>")),
     ("'affine.load' op " + DIM, 4)),
    ("affine.apply of an IV is a dim, not a symbol",
     _func(_loop("    %j = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)\n"
                 "    %v = affine.load %A[%j] : memref<10xf32>\n"
                 "    %w = affine.load %A[symbol(%j)] : memref<10xf32>")), ("'affine.load' op " + SYM, 5)),
    ("affine.apply may take any index operand",
     _func(_loop("    %t = arith.addi %i, %n : index\n    %j = affine.apply affine_map<(d0) -> (d0 + 1)>(%t)")), None),
    ("affine.apply: an IV in a symbol position",
     _func(_loop("    %j = affine.apply affine_map<()[s0] -> (s0 + 1)>()[%i]")),
     ("'affine.apply' op dimensional operand cannot be used as a symbol", 3)),
    ("index_cast of an i32 argument inside a loop",
     _func(_loop("    %j = arith.index_cast %n : i32 to index\n    %v = affine.load %A[%j] : memref<10xf32>"),
           "%A: memref<10xf32>, %n: i32"), ("'affine.load' op " + DIM, 4)),
    ("memref.dim of a top-level memref inside a loop",
     _func(_loop("    %c0 = arith.constant 0 : index\n    %d = memref.dim %B, %c0 : memref<?xf32>\n"
                 "    affine.for %k = 0 to %d {\n    }\n    %v = affine.load %A[%d + %i] : memref<10xf32>"),
           "%A: memref<10xf32>, %B: memref<?xf32>"), None),
    ("memref.dim of an alloc sized by an IV",
     _func(_loop("    %B = memref.alloc(%i) : memref<?xf32>\n    %c0 = arith.constant 0 : index\n"
                 "    %d = memref.dim %B, %c0 : memref<?xf32>\n"
                 "    affine.for %k = affine_map<(d0) -> (d0)>(%d) to 10 {\n"
                 "    }")), ("'affine.for' op " + DIM, 6)),
    ("memref.dim of an alloc sized by a symbol",
     _func(_loop("    %B = memref.alloc(%n) : memref<?xf32>\n    %c0 = arith.constant 0 : index\n"
                 "    %d = memref.dim %B, %c0 : memref<?xf32>\n    affine.for %k = 0 to %d {\n    }")), None),
    ("memref.dim of an alloca is not a symbol",
     _func(_loop("    %B = memref.alloca(%n) : memref<?xf32>\n    %c0 = arith.constant 0 : index\n"
                 "    %d = memref.dim %B, %c0 : memref<?xf32>\n    %v = affine.load %A[%d] : memref<10xf32>")),
     ("'affine.load' op " + DIM, 6)),
    ("gpu.launch is an affine scope that sees the values around it",
     _func("  %c1 = arith.constant 1 : index\n" + _loop(
         "    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in "
         "(%sx = %c1, %sy = %c1, %sz = %c1) {\n      %v = affine.load %A[%tx + %i] : memref<10xf32>\n"
         "      affine.for %k = 0 to %i {\n      }\n      affine.for %k2 = 0 to %tx {\n      }\n"
         "      gpu.terminator\n    }")), None),
    ("gpu.thread_id is pure: a symbol",
     _func(_loop("    %t = gpu.thread_id x\n    affine.for %k = 0 to %t {\n    }")), None),
    ("an iter_arg is not a dim",
     _func("  %c0 = arith.constant 0 : index\n  %r = affine.for %i = 0 to 10 iter_args(%a = %c0) -> (index) {\n"
           "    %v = affine.load %A[%a] : memref<10xf32>\n    affine.yield %a : index\n  }"),
     ("'affine.load' op " + DIM, 4)),
    ("divsi by a constant 7 is speculatable",
     _func(_loop("    %q = arith.divsi %n, %c7 : index\n    affine.for %k = 0 to %q {\n    }"),
           "%n: index") .replace("{\n  affine.for", "{\n  %c7 = arith.constant 7 : index\n  affine.for", 1), None),
    ("divsi by -1 is not",
     _func(_loop("    %q = arith.divsi %n, %c7 : index\n    %v = affine.load %A[%q] : memref<10xf32>"))
     .replace("{\n  affine.for", "{\n  %c7 = arith.constant -1 : index\n  affine.for", 1),
     ("'affine.load' op " + DIM, 5)),
    ("remui by an unknown divisor is not",
     _func(_loop("    %q = arith.remui %n, %n : index\n    %v = affine.load %A[%q] : memref<10xf32>")),
     ("'affine.load' op " + DIM, 4)),
    ("floordivsi is pure",
     _func(_loop("    %q = arith.floordivsi %n, %n : index\n    %v = affine.load %A[symbol(%q)] : memref<10xf32>")),
     None),
    ("affine.if: an IV as a symbol",
     _func(_loop("    affine.if affine_set<()[s0] : (s0 >= 0)>()[%i] {\n    }")), ("'affine.if' op " + SYM, 3)),
    ("affine.min: an IV as a symbol",
     _func(_loop("    %m = affine.min affine_map<()[s0] -> (s0, 4)>()[%i]")), ("'affine.min' op " + SYM, 3)),
]


@pytest.mark.parametrize("name, text, verdict", CASES, ids=[c[0] for c in CASES])
def test_mlir_dim_and_symbol_rules(name, text, verdict):
    if verdict is None:
        m = air.parse(text)
        assert str(air.parse(str(m))) == str(m)
        return
    message, line = verdict
    with pytest.raises(air.VerifyError) as info:
        air.parse(text, "dims.mlir")
    assert message in info.value.message and info.value.location.line == line, info.value.formatted()


def test_bare_outer_iv_bound_reads_as_a_dim_and_prints_as_mlir_accepts():
    m = air.parse(_func(_loop("    affine.for %k = 0 to %i {\n    }"), "%n: index"))
    text = str(m)
    assert "to #map(%" in text or "to affine_map<(d0) -> (d0)>(%" in text, text
    assert str(air.parse(text)) == text


def test_long_chains_of_index_ops_do_not_exhaust_the_recursion_limit():
    # A symbol chain of 3000 arith.addi inside a loop, and a dim chain of 3000 affine.apply.
    n = 3000
    lines = ["    %a0 = arith.addi %n, %n : index", "    %w0 = affine.apply affine_map<(d0) -> (d0)>(%i)"]
    lines += [f"    %a{k} = arith.addi %a{k - 1}, %n : index" for k in range(1, n)]
    lines += [f"    %w{k} = affine.apply affine_map<(d0) -> (d0 + 1)>(%w{k - 1})" for k in range(1, n)]
    lines += [f"    affine.for %j = 0 to %a{n - 1} {{\n    }}", f"    %v = affine.load %A[%w{n - 1}] : memref<10xf32>"]
    m = air.parse(_func(_loop("\n".join(lines))))
    assert f"to %a{n - 1} {{" in str(m)
    bad = "\n".join(lines).replace("%a0 = arith.addi %n, %n", "%a0 = arith.addi %i, %n")
    with pytest.raises(air.VerifyError) as info:
        air.parse(_func(_loop(bad)))
    assert "'affine.for' op " + DIM in info.value.message
