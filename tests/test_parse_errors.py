# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""Malformed inputs: each a small valid program broken in exactly one way.

Every case asserts the error class (``ParseError`` for bad text, ``VerifyError`` for text
that parses but breaks an invariant), the exact line and column, and what the message
says was expected or wrong. A property test then mutates valid programs at random and
checks that nothing but an ``IRError`` ever escapes, and that whatever still parses
prints and re-parses to the same text.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.affine_expr import dim
from affine_ir.affine_map import AffineMap, IntegerSet
from affine_ir.dialects import affine as affine_d
from affine_ir.dialects import arith, func
from affine_ir.dialects.builtin import ModuleOp
from affine_ir.errors import Location
from affine_ir.testing.examples import MINMAX_NEST, SHIFT
from affine_ir.types import FunctionType, f32, i32, index, memref

P, V = air.ParseError, air.VerifyError

LOOP = """\
func.func @f(%A: memref<16xf32>, %n: index, %x: f32) {
  affine.for %i = 0 to 16 {
    %v = affine.load %A[%i] : memref<16xf32>
    affine.store %v, %A[%i] : memref<16xf32>
  }
  return
}
"""

ITER = """\
func.func @f(%x: f32, %n: index) -> f32 {
  %r = affine.for %i = 0 to 16 iter_args(%a = %x) -> (f32) {
    %s = arith.addf %a, %x : f32
    affine.yield %s : f32
  }
  return %r : f32
}
"""

IF_ELSE = """\
func.func @f(%x: f32, %n: index) -> f32 {
  %r = affine.if affine_set<()[s0] : (s0 >= 0)>()[%n] -> f32 {
    affine.yield %x : f32
  } else {
    affine.yield %x : f32
  }
  return %r : f32
}
"""

CALLS = """\
func.func @g(%x: f32) -> f32 {
  return %x : f32
}
func.func @f(%x: f32) -> f32 {
  %r = func.call @g(%x) : (f32) -> f32
  return %r : f32
}
"""

CONST = """\
func.func @f() {
  %c = arith.constant 1 : i32
  return
}
"""

ALIASES = """\
#ub = affine_map<(d0) -> (d0 + 8)>
func.func @f(%n: index) {
  affine.for %i = 0 to #ub(%n) {
  }
  return
}
"""

MISC = """\
func.func @f(%a: f32, %v: vector<4xf32>, %m: memref<4x4xf32>, %k: index, %i: i32) {
  %b = vector.broadcast %a : f32 to vector<4xf32>
  %r = vector.reduction <add>, %v : vector<4xf32> into f32
  %l = memref.load %m[%k, %k] : memref<4x4xf32>
  %c = arith.cmpi slt, %i, %i : i32
  %p = affine.parallel (%x, %y) = (0, 0) to (4, 4) reduce ("addf") -> (f32) {
    affine.yield %a : f32
  }
  return
}
"""

GPU = """\
func.func @f(%A: memref<16x16xf16>, %c: index, %h: f16) {
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c, %gy = %c, %gz = %c) threads(%tx, %ty, %tz) in (%sx = %c, %sy = %c, %sz = %c) {
    %a = gpu.subgroup_mma_load_matrix %A[%tx, %ty] leadDimension 16 : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %z = gpu.subgroup_mma_constant_matrix %h : !gpu.mma_matrix<16x16xf16, "COp">
    gpu.subgroup_mma_store_matrix %z, %A[%tx, %ty] leadDimension 16 : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x16xf16>
    gpu.barrier
    gpu.terminator
  }
  return
}
"""

VALID = {"loop": LOOP, "iter": ITER, "if_else": IF_ELSE, "calls": CALLS, "const": CONST, "aliases": ALIASES,
         "misc": MISC, "gpu": GPU}


def broken(base: str, old: str, new: str) -> str:
    """``base`` with its one occurrence of ``old`` replaced by ``new``."""
    assert base.count(old) == 1, f"{old!r} occurs {base.count(old)} times"
    return base.replace(old, new)


# (id, text, error class, line, col, phrase in the message)
CASES = [
    # -- lexer
    ("bad character", broken(LOOP, "affine.load %A", "affine.load `%A"), P, 3, 22, "unexpected character '`'"),
    ("unterminated string", broken(CONST, "%c = arith.constant 1 : i32", '%c = arith.constant {s = "abc} 1 : i32'),
     P, 2, 28, "unterminated string literal"),
    ("bad string escape", broken(CONST, "%c = arith.constant 1 : i32", '%c = arith.constant {s = "a\\qb"} 1 : i32'),
     P, 2, 28, "unknown escape '\\q'"),
    # -- values and scopes
    ("undefined value", broken(LOOP, "affine.load %A", "affine.load %B"), P, 3, 22, "use of undefined value '%B'"),
    ("redefinition", broken(LOOP, "    affine.store", "    %v = arith.addf %x, %x : f32\n    affine.store"),
     P, 4, 5, "redefinition of SSA value '%v'"),
    ("value of a loop body used after the loop",
     broken(LOOP, "  return", "  affine.store %v, %A[0] : memref<16xf32>\n  return"),
     P, 6, 16, "use of undefined value '%v'"),
    ("function body uses a value of the module (isolation)",
     "module {\n  %c = arith.constant 0 : index\n" + broken(LOOP, "affine.load %A[%i]", "affine.load %A[symbol(%c)]"),
     P, 5, 32, "use of undefined value '%c'"),
    ("invalid result number", broken(ITER, "return %r : f32", "return %r#1 : f32"),
     P, 6, 10, "invalid result number '%r#1'"),
    ("zero result count", broken(ITER, "%r = affine.for", "%r:0 = affine.for"), P, 2, 6, "positive result count"),
    ("too many result names", broken(CONST, "%c = arith", "%c, %d = arith"), P, 2, 3,
     "defines 1 result, but 2 names were given"),
    # -- types of operands
    ("wrong memref type on affine.load", broken(LOOP, "%A[%i] : memref<16xf32>\n    affine.store",
                                                "%A[%i] : memref<8xf32>\n    affine.store"),
     P, 3, 29, "%A has type memref<16xf32>, but the op expects memref<8xf32>"),
    ("wrong value type on affine.store", broken(LOOP, "affine.store %v,", "affine.store %n,"),
     P, 4, 29, "%n has type index, but the op expects f32"),
    ("wrong type on arith.addf", broken(ITER, "arith.addf %a, %x : f32", "arith.addf %a, %x : f64"),
     P, 3, 28, "%a has type f32, but the op expects f64"),
    ("integer op on floats", broken(ITER, "arith.addf %a, %x : f32", "arith.addi %a, %x : f32"),
     P, 3, 28, "'arith.addi' expects int operands, got f32"),
    ("iter_args init of the wrong type", broken(ITER, "iter_args(%a = %x)", "iter_args(%a = %n)"),
     P, 2, 51, "%n has type index, but the op expects f32"),
    ("non-index affine operand", broken(LOOP, "affine.load %A[%i]", "affine.load %A[%x]"),
     P, 3, 25, "affine operand '%x' has type f32, expected index"),
    # -- map arity against operands
    ("affine.apply map arity", broken(LOOP, "    affine.store",
                                      "    %s = affine.apply affine_map<(d0) -> (d0)>(%i, %i)\n    affine.store"),
     P, 4, 23, "takes 1 dim and 0 symbols, but 2 dim operands and 0 symbol operands were given"),
    ("loop bound map arity", broken(LOOP, "0 to 16", "0 to affine_map<(d0)[s0] -> (d0 + s0)>(%n)"),
     P, 2, 24, "takes 1 dim and 1 symbol, but 1 dim operand and 0 symbol operands were given"),
    ("affine.if set arity", broken(IF_ELSE, "()[%n] -> f32", "(%n)[%n] -> f32"),
     P, 2, 18, "set ()[s0] : (s0 >= 0) takes 0 dims and 1 symbol"),
    ("index count vs memref rank", broken(LOOP, "affine.load %A[%i]", "affine.load %A[%i, %i]"),
     P, 3, 24, "2 indices for a memref of rank 1"),
    ("memref.load index count", broken(MISC, "memref.load %m[%k, %k]", "memref.load %m[%k]"),
     P, 4, 27, "1 indices for a memref of rank 2"),
    # -- symbols, steps, loop syntax
    ("loop IV used as a symbol", broken(LOOP, "affine.load %A[%i]", "affine.load %A[symbol(%i)]"),
     V, 3, 5, "'affine.load' op operand cannot be used as a symbol (index operand #0: %i)"),
    ("loop IV as a bound symbol", broken(LOOP, "    affine.store", "    affine.for %j = 0 to "
                                         "affine_map<()[s0] -> (s0)>()[%i] {\n    }\n    affine.store"),
     V, 4, 5, "'affine.for' op operand cannot be used as a symbol (upper bound operand #0: %i)"),
    ("step 0", broken(LOOP, "0 to 16", "0 to 16 step 0"), P, 2, 32, "step must be positive, got 0"),
    ("negative step", broken(LOOP, "0 to 16", "0 to 16 step -2"), P, 2, 32, "step must be positive, got -2"),
    ("missing 'to'", broken(LOOP, "0 to 16", "0 16"), P, 2, 21, "expected 'to', found '16'"),
    ("bound map without results", broken(LOOP, "0 to 16", "0 to affine_map<(d0) -> ()>(%n)"),
     P, 2, 24, "loop bound map needs at least one result"),
    ("bound too large for 64 bits", broken(LOOP, "0 to 16", "0 to 99999999999999999999"),
     P, 2, 24, "does not fit in 64 bits"),
    # -- ops and types
    ("unknown op", broken(LOOP, "affine.store %v", "affine.stor %v"), P, 4, 5, "unknown operation 'affine.stor'"),
    ("generic op form", broken(CONST, "%c = arith.constant 1 : i32", '"test.op"() : () -> ()'),
     P, 2, 3, "generic op form"),
    ("unknown type", broken(LOOP, "%x: f32", "%x: f31"), P, 1, 49, "expected type, found 'f31'"),
    ("integer type of width 0", broken(LOOP, "%x: f32", "%x: i0"), P, 1, 49, "invalid integer type 'i0'"),
    ("bad memref shape", broken(LOOP, "%A: memref<16xf32>", "%A: memref<16x-1xf32>"),
     P, 1, 28, "expected a dimension size ('4x', '?x') or the element type in the memref type, found '-'"),
    ("dynamic vector type", broken(LOOP, "%x: f32", "%x: vector<?xf32>"),
     P, 1, 56, "vector types need a static, non-empty, positive shape"),
    ("vector of memrefs", broken(LOOP, "%x: f32", "%x: vector<4xmemref<4xf32>>"),
     P, 1, 56, "invalid vector element type memref<4xf32>"),
    ("unknown address space", broken(LOOP, "memref<16xf32>, %n", "memref<16xf32, #gpu.address_space<shared>>, %n"),
     P, 1, 52, "expected 'global' or 'workgroup' or 'private', found 'shared'"),
    ("bad mma operand kind", broken(GPU, '!gpu.mma_matrix<16x16xf16, "AOp">', '!gpu.mma_matrix<16x16xf16, "DOp">'),
     P, 3, 124, 'expected "AOp", "BOp" or "COp", found "DOp"'),
    # -- regions, terminators, results
    ("yield type vs iter_args", broken(ITER, "affine.yield %s : f32", "affine.yield %i : index"),
     V, 4, 5, "'affine.yield' op yields (index) but the parent 'affine.for' expects (f32)"),
    ("affine.if with results but no else", broken(IF_ELSE, "  } else {\n    affine.yield %x : f32\n  }\n", "  }\n"),
     P, 2, 3, "an affine.if with results needs an 'else' region"),
    ("return type mismatch", broken(CALLS, "func.func @g(%x: f32) -> f32", "func.func @g(%x: f32) -> i32"),
     V, 2, 3, "'func.return' op returns (f32) but @g declares (i32)"),
    ("call to an unknown function", broken(CALLS, "func.call @g(", "func.call @h("),
     V, 5, 3, "'@h' does not reference a function in this module"),
    ("call type mismatch", broken(CALLS, "(f32) -> f32\n  return %r", "(f32) -> f64\n  return %x"),
     V, 5, 3, "type does not match the callee @g"),
    ("terminator not last", broken(ITER, "    affine.yield %s : f32\n", "    affine.yield %s : f32\n    gpu.barrier\n"),
     V, 4, 5, "'affine.yield' op is a terminator but is not the last op of its block"),
    ("function without return", broken(CONST, "  return\n", ""), V, 1, 1, "body must end with 'func.return'"),
    ("gpu.launch without terminator", broken(GPU, "    gpu.terminator\n", ""),
     V, 2, 3, "'gpu.launch' op body must end with 'gpu.terminator'"),
    ("storing an AOp fragment", broken(GPU, "gpu.subgroup_mma_store_matrix %z", "gpu.subgroup_mma_store_matrix %a")
     .replace('!gpu.mma_matrix<16x16xf16, "COp">, memref', '!gpu.mma_matrix<16x16xf16, "AOp">, memref'),
     V, 5, 5, 'expects the stored matrix to be a "COp"'),
    ("region not closed (EOF)", LOOP[: LOOP.index("  return")], P, 6, 1,
     "expected '}' to close the region opened at 1:54, found end of input"),
    ("public declaration", broken(CALLS, "func.func @g(%x: f32) -> f32 {\n  return %x : f32\n}",
                                  "func.func @g(f32) -> f32"), V, 1, 1, "declaration @g cannot be public"),
    ("duplicate function", broken(CALLS, "@g(%x: f32) -> f32 {", "@f(%x: f32) -> f32 {").replace(
        "func.call @g", "func.call @f"), V, 4, 1, "redefinition of symbol @f"),
    ("inherent attribute in the attribute dictionary", broken(LOOP, "  }\n  return", "  } {step = 2}\n  return"),
     P, 5, 5, "'step' is set by the syntax of 'affine.for'"),
    ("duplicate attribute", broken(CONST, "arith.constant 1", "arith.constant {a, a} 1"),
     P, 2, 27, "duplicate attribute 'a'"),
    # -- affine maps and sets
    ("undeclared identifier in a map", broken(ALIASES, "(d0 + 8)", "(d1 + 8)"),
     P, 1, 27, "use of undeclared identifier 'd1'"),
    ("non-affine product", broken(ALIASES, "(d0) -> (d0 + 8)", "(d0)[s0] -> (d0 * s0)").replace("(%n)", "(%n)[%n]"),
     P, 1, 34, "non-affine product"),
    ("floordiv by 0", broken(LOOP, "affine.load %A[%i]", "affine.load %A[%i floordiv 0]"),
     P, 3, 28, "floordiv of (d0) by non-positive constant 0"),
    ("mod by a negative constant", broken(LOOP, "affine.load %A[%i]", "affine.load %A[%i mod -4]"),
     P, 3, 28, "mod of (d0) by non-positive constant -4"),
    ("division by a dim", broken(ALIASES, "(d0 + 8)", "(d0 ceildiv d0)"),
     P, 1, 30, "non-affine ceildiv"),
    ("'>' in a constraint", broken(IF_ELSE, "(s0 >= 0)", "(s0 > 0)"), P, 2, 42, "expected '>=', '<=' or '=='"),
    ("alias used before its definition", ALIASES.replace("#ub = affine_map<(d0) -> (d0 + 8)>\n", "") +
     "#ub = affine_map<(d0) -> (d0 + 8)>\n", P, 2, 24, "undefined attribute alias '#ub'"),
    ("alias defined twice", "#ub = affine_map<(d0) -> (d0)>\n" + ALIASES, P, 2, 1,
     "redefinition of attribute alias '#ub'"),
    # -- literals
    ("i8 literal out of range", broken(CONST, "1 : i32", "300 : i8"), P, 2, 23,
     "integer constant 300 out of range for i8"),
    ("negative i8 literal out of range", broken(CONST, "1 : i32", "-129 : i8"), P, 2, 24, "-129 out of range for i8"),
    ("i1 literal out of range", broken(CONST, "1 : i32", "2 : i1"), P, 2, 23, "integer constant 2 out of range for i1"),
    ("float literal for an integer type", broken(CONST, "1 : i32", "1.5 : i32"),
     P, 2, 23, "floating point literal for integer type i32"),
    ("float literal too large for f16", broken(CONST, "1 : i32", "1.0e10 : f16"), P, 2, 23, "out of range for f16"),
    ("hex float with too many bits", broken(CONST, "1 : i32", "0x1FFFF : f16"), P, 2, 23, "out of range for f16"),
    ("dense size mismatch", broken(CONST, "1 : i32", "dense<[1, 2, 3]> : vector<4xi32>"),
     P, 2, 23, "dense literal has 3 elements, type vector<4xi32> has 4"),
    # -- other dialects
    ("vector.broadcast to the wrong element type", broken(MISC, "f32 to vector<4xf32>", "f32 to vector<4xf64>"),
     P, 2, 28, "cannot broadcast f32 to vector<4xf64>"),
    ("unknown vector reduction", broken(MISC, "<add>", "<plus>"), P, 3, 26, "found 'plus'"),
    ("unknown cmpi predicate", broken(MISC, "cmpi slt", "cmpi lt"), P, 5, 19, "expected 'eq' or 'ne'"),
    ("unknown parallel reduction", broken(MISC, 'reduce ("addf")', 'reduce ("sum")'),
     P, 6, 60, 'unknown reduction "sum"'),
    ("parallel bound count", broken(MISC, "(0, 0) to (4, 4)", "(0) to (4, 4)"),
     P, 6, 35, "expected 2 bounds, one per induction variable, got 1"),
    ("mma load without leadDimension", broken(GPU, "%A[%tx, %ty] leadDimension 16 : memref<16x16xf16> ->",
                                              "%A[%tx, %ty] : memref<16x16xf16> ->"),
     P, 3, 52, "expected 'leadDimension'"),
    # -- the generic op form ("name"(...) : (...) -> (...)) of registered ops; see test_mlir_inputs.py
    ("generic form of an unknown op of a modelled dialect",
     broken(CONST, "%c = arith.constant 1 : i32", '"affine.stor"() : () -> ()'), P, 2, 3,
     "unknown operation 'affine.stor' (the 'affine' dialect is modelled here and has no such op)"),
    ("generic form of a registered op with regions",
     broken(CONST, "%c = arith.constant 1 : i32", '"affine.for"() ({\n  }) : () -> ()'), P, 2, 18,
     "the generic form of a registered op with regions is not supported"),
    ("generic form of a registered op that has none",
     broken(MISC, "%c = arith.cmpi slt, %i, %i : i32", '%c = "arith.cmpi"(%i, %i) {predicate = 2 : i64} : (i32, i32) -> i1'),
     P, 5, 3, "the generic form of 'arith.cmpi' is not supported; use its custom syntax"),
    ("generic op operand types", broken(ITER, "%s = arith.addf %a, %x : f32", '%s = "arith.addf"(%a, %x) : (f64, f32) -> f32'),
     P, 3, 31, "%a has type f32, but the op expects f64"),
    ("generic op operand count", broken(ITER, "%s = arith.addf %a, %x : f32", '%s = "arith.addf"(%a, %x) : (f32) -> f32'),
     P, 3, 31, "2 operands but the type (f32) -> f32 has 1"),
    ("generic op without its attribute",
     broken(LOOP, "    affine.store", '    %s = "affine.apply"(%i) : (index) -> index\n    affine.store'),
     P, 4, 5, "'affine.apply' in the generic form needs the attribute 'map'"),
    ("generic op result types", broken(LOOP, "    affine.store", '    %s = "affine.apply"(%i) {map = affine_map<(d0) -> (d0)>} '
                                       ': (index) -> i32\n    affine.store'),
     P, 4, 62, "'affine.apply' defines results of type (index), but the generic form says (index) -> i32"),
    ("generic op arity", broken(ITER, "%s = arith.addf %a, %x : f32", '%s = "arith.addf"(%a) : (f32) -> f32'),
     P, 3, 5, "'arith.addf' in the generic form is malformed (TypeError: arith.addf takes 2 operands, got 1)"),
    ("generic op invariants", broken(ITER, "%s = arith.addf %a, %x : f32", '%s = "arith.addf"(%a, %i) : (f32, index) -> f32'),
     P, 3, 5, "'arith.addf' op operands and result must all have type f32"),
    ("generic yield outside a loop", broken(CONST, "  return\n", '  "affine.yield"() : () -> ()\n  return\n'),
     P, 3, 3, "'affine.yield' op must terminate the body of an affine.for, affine.if or affine.parallel"),
    ("generic op with successors", broken(CONST, "%c = arith.constant 1 : i32", '"func.return"() [^bb1] : () -> ()'),
     P, 2, 19, "successors ('[^bb1]') are not supported"),
    ("properties without braces", broken(CONST, "%c = arith.constant 1 : i32", '"func.return"() <a> : () -> ()'),
     P, 2, 20, "expected '{' to begin the properties of the generic op, found 'a'"),
    ("property and attribute of one name",
     broken(LOOP, "    affine.store", '    %s = "affine.apply"(%i) <{map = affine_map<(d0) -> (d0)>}> '
            '{map = affine_map<(d0) -> (d0)>} : (index) -> index\n    affine.store'),
     P, 4, 64, "attribute 'map' is given both as a property and as an attribute"),
    ("trailing location not closed", broken(CONST, "  return\n", '  return loc("x.mlir":1:2\n'),
     P, 5, 1, "expected ')' to close the location opened at 3:13, found end of input"),
]


@pytest.mark.parametrize("name", list(VALID))
def test_the_unbroken_programs_are_valid(name):
    m = air.parse(VALID[name])
    assert air.parse(str(m)) is not None


def test_there_are_enough_cases():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("text, cls, line, col, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_input(text, cls, line, col, phrase):
    with pytest.raises(air.IRError) as info:
        air.parse(text, "bad.mlir")
    err = info.value
    assert type(err) is cls, err.formatted()
    assert err.location is not None and err.location.file == "bad.mlir"
    assert (err.location.line, err.location.col) == (line, col), err.formatted()
    assert phrase in err.message, err.formatted()
    assert err.formatted() == f"bad.mlir:{line}:{col}: error: {err.message}"


def test_line_offset_shifts_reported_lines():
    with pytest.raises(air.ParseError) as info:
        air.parse(broken(LOOP, "affine.load %A", "affine.load %B"), "x.mlir", line_offset=10)
    assert (info.value.location.line, info.value.location.col) == (13, 22)


def test_nesting_is_bounded_not_a_recursion_error():
    deep = "func.func @f() {\n" + "".join(f"affine.for %i{k} = 0 to 4 {{\n" for k in range(150)) + \
        "}\n" * 150 + "return\n}\n"
    with pytest.raises(air.ParseError, match="nested more than 100 levels"):
        air.parse(deep)
    parens = broken(LOOP, "affine.load %A[%i]", "affine.load %A[" + "(" * 500 + "%i" + ")" * 500 + "]")
    with pytest.raises(air.ParseError, match="parentheses nested"):
        air.parse(parens)
    negations = broken(LOOP, "affine.load %A[%i]", "affine.load %A[" + "-" * 3001 + "%i]")
    assert "affine.load %A[-%i]" in str(air.parse(negations))


# -- IR built through the API: the verifier names the op and its location -------------------
HERE = Location("api.py", 7, 3)


def _function_with(*arg_types):
    f = func.FuncOp("f", FunctionType(tuple(arg_types), ()), arg_names=["A", "n"][: len(arg_types)])
    ModuleOp([f])
    return f


def _verify_error(root) -> air.VerifyError:
    with pytest.raises(air.VerifyError) as info:
        air.verify(root)
    return info.value


def test_api_load_with_too_many_indices():
    f = _function_with(memref((16,), f32), index)
    A, n = f.args
    f.body.append(affine_d.AffineLoadOp(A, AffineMap(1, 0, (dim(0), dim(0) + 1)), [n], location=HERE))
    f.body.append(func.ReturnOp())
    err = _verify_error(f.parent_op)
    assert err.location == HERE and err.formatted().startswith("api.py:7:3: error: 'affine.load' op ")
    assert "has 2 indices for a memref of rank 1" in err.message


def test_api_store_of_the_wrong_type():
    f = _function_with(memref((16,), f32), index)
    A, n = f.args
    c = f.body.append(arith.ConstantOp.of(1, i32))
    f.body.append(affine_d.AffineStoreOp(c.result, A, AffineMap.identity(1), [n], location=HERE))
    f.body.append(func.ReturnOp())
    err = _verify_error(f.parent_op)
    assert err.location == HERE and "'affine.store' op stores a i32 into a memref of f32" in err.message


def test_api_apply_with_missing_operands():
    f = _function_with(memref((16,), f32), index)
    f.body.append(affine_d.AffineApplyOp(AffineMap(2, 0, (dim(0) + dim(1),)), [f.args[1]], location=HERE))
    f.body.append(func.ReturnOp())
    err = _verify_error(f.parent_op)
    assert err.location == HERE and "'affine.apply' op map (d0, d1) -> (d0 + d1) takes 2 operands, got 1" \
        in err.message


def test_api_loop_with_step_zero_and_if_with_bad_operands():
    f = _function_with(memref((16,), f32), index)
    loop = f.body.append(affine_d.AffineForOp(0, [], 16, [], step=0, location=HERE))
    f.body.append(func.ReturnOp())
    assert "'affine.for' op step must be a positive integer, got 0" in _verify_error(f.parent_op).message
    loop.attributes["step"] = 1
    air.verify(f.parent_op)
    cond = IntegerSet(1, 0, (dim(0),), (False,))
    loop.body.insert(0, affine_d.AffineIfOp(cond, [], location=Location("api.py", 9, 5)))
    err = _verify_error(f.parent_op)
    assert str(err.location) == "api.py:9:5" and "'affine.if' op set (d0) : (d0 >= 0) takes 1 operands" in err.message


def test_api_operand_that_does_not_dominate():
    f = _function_with(memref((16,), f32), index)
    loop = f.body.append(affine_d.AffineForOp(0, [], 16, [], iv_name="i"))
    f.body.append(affine_d.AffineLoadOp(f.args[0], AffineMap.identity(1), [loop.induction_var], location=HERE))
    f.body.append(func.ReturnOp())
    err = _verify_error(f.parent_op)
    assert err.location == HERE and "operand #1 (%i : index) does not dominate this use" in err.message


def test_api_return_of_the_wrong_type_and_malformed_op():
    f = _function_with(memref((16,), f32), index)
    f.body.append(func.ReturnOp([f.args[1]], location=HERE))
    err = _verify_error(f.parent_op)
    assert err.location == HERE and "'func.return' op returns (index) but @f declares ()" in err.message
    f.body.ops[-1].erase()
    f.body.append(func.ReturnOp())
    loop = affine_d.AffineForOp(0, [], 4, [], location=HERE)
    loop.regions.clear()  # no body at all
    f.body.insert(0, loop)
    err = _verify_error(f.parent_op)
    assert err.location == HERE and err.message.startswith("'affine.for' op is malformed")


# -- random mutations: never an internal exception ------------------------------------------
SEEDS = [
    SHIFT,
    MINMAX_NEST,
    ITER,
    IF_ELSE,
    CALLS,
    MISC,
    GPU,
    """\
#set = affine_set<(d0)[s0] : (d0 >= 0, s0 - d0 - 1 >= 0)>
func.func @more(%n: index, %x: f32, %v: vector<8xf32>) -> f32 {
  %m = memref.alloc(%n) : memref<?x8xf32>
  %d = memref.dim %m, %n : memref<?x8xf32>
  %w:2 = affine.for %i = 0 to %d iter_args(%a = %x, %b = %x) -> (f32, f32) {
    %l = affine.vector_load %m[%i, 0] : memref<?x8xf32>, vector<8xf32>
    %s = vector.reduction <add>, %l : vector<8xf32> into f32
    %t = affine.if #set(%i)[%n] -> f32 {
      affine.yield %s : f32
    } else {
      %e = math.exp %s : f32
      affine.yield %e : f32
    }
    %u = arith.addf %a, %t : f32
    affine.yield %u, %b : f32, f32
  }
  %p = affine.parallel (%i, %j) = (0, max(0, symbol(%n) - 4)) to (%n, 8) step (1, 2) reduce ("maximumf") -> (f32) {
    %y = affine.load %m[%i, %j] : memref<?x8xf32>
    affine.yield %y : f32
  }
  %c = arith.constant dense<1.0> : vector<8xf32>
  %h = arith.constant 0x7FC00000 : f32
  %g = arith.constant -3 : i8
  memref.dealloc %m : memref<?x8xf32>
  %z = arith.addf %w#1, %p : f32
  return %z : f32
}
""",
]
_TOKEN = re.compile(r'%[\w#.$-]+|@\w+|#[\w.]+|"[^"\n]*"|[A-Za-z_][\w.]*|\d+\.\d*(?:e[-+]?\d+)?|0x[0-9A-Fa-f]+|\d+'
                    r"|->|\S")
_INSERTS = ["(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=", "->", "%", "-", "*", "?", "0", "-1", "1.5", "0x7F",
            "99999999999999999999", "affine.for", "affine.if", "else", "to", "step", "max", "min", "symbol",
            "floordiv", "mod", "iter_args", "memref", "vector", "index", "f32", "i1", "affine_map", "affine_set",
            "dense",
            "module", "func.func", "return", "affine.yield", "%i", "%n", "%r#1", "#map", "#set", '"', "d0", "s0",
            "true", "attributes", "private", "^bb0", "x", "?x", "gpu.terminator", "reduce", "leadDimension", "@g"]


# Ops of unregistered dialects and registered ops in the generic form (parsed with allow_unregistered).
GENERIC_SEED = """\
%idx = "test.foo"() : () -> (index)
func.func @g(%A: memref<8x8xf32>, %i: index, %a: f32) -> f32 {
  %c = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
  %v = "affine.load"(%A, %i, %i) <{map = affine_map<(d0, d1) -> (d1, d0 + 1)>}> : (memref<8x8xf32>, index, index) -> f32
  %s = "arith.addf"(%v, %c) : (f32, f32) -> f32
  "affine.store"(%s, %A, %i) {map = affine_map<(d0) -> (d0, 0)>} : (f32, memref<8x8xf32>, index) -> ()
  %y = "affine.apply" (%i) { map = affine_map<(d0) -> (d0 + 1)> } : (index) -> (index)
  affine.for %j = 0 to 4 {
    %w:2 = "fma"(%j, %y, %i) : (index, index, index) -> (index, index)
    "test.region"(%w#0) ({
    ^bb0(%q: index):
      "test.use"(%q) : (index) -> ()
      affine.load %A[%j, %j] : memref<8x8xf32>
      "terminate"() : () -> ()
    }, {
    }) {k = 1 : i64} : (index) -> () loc("x.mlir":3:4)
    "affine.yield"() : () -> ()
  }
  "func.return"(%s) : (f32) -> ()
}
"""
_GENERIC_INSERTS = ['"test.x"', '"affine.apply"', '"func.return"', "loc", "<{", "}>", "({", "})", '"affine.yield"', "map"]


@st.composite
def mutants(draw, seeds=SEEDS, inserts=()):
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
        if not spans:
            break
        kind = draw(st.sampled_from(["delete", "delete range", "duplicate", "swap", "insert", "truncate", "chars"]))
        a = draw(st.integers(0, len(spans) - 1))
        s, e = spans[a]
        if kind == "delete":
            text = text[:s] + text[e:]
        elif kind == "delete range":
            b = min(len(spans) - 1, a + draw(st.integers(0, 6)))
            text = text[:s] + text[spans[b][1]:]
        elif kind == "duplicate":
            text = text[:e] + " " + text[s:e] + text[e:]
        elif kind == "swap":
            s2, e2 = spans[draw(st.integers(a, len(spans) - 1))]
            if s2 >= e:
                text = text[:s] + text[s2:e2] + text[e:s2] + text[s:e] + text[e2:]
        elif kind == "insert":
            text = text[:s] + draw(st.sampled_from(_INSERTS + list(inserts))) + " " + text[s:]
        elif kind == "truncate":
            text = text[:s]
        else:
            p = draw(st.integers(0, len(text)))
            text = text[:p] + draw(st.text(alphabet="%#@^!(){}[]<>,:=-+*?x0123456789.\"\\ \n", max_size=3)) + \
                text[p + draw(st.integers(0, 3)):]
    return text


@pytest.mark.parametrize("seed", range(len(SEEDS)))
def test_the_seeds_are_valid(seed):
    assert air.parse(str(air.parse(SEEDS[seed]))) is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants())
def test_mutated_programs_raise_only_ir_errors(text):
    try:
        m = air.parse(text)
    except air.IRError as e:
        assert e.location is not None and e.message
        return
    printed = str(m)
    again = air.parse(printed)
    assert str(again) == printed
    assert air.structurally_equal(again, m)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants([GENERIC_SEED], _GENERIC_INSERTS))
def test_mutated_generic_ops_raise_only_ir_errors(text):
    try:
        m = air.parse(text, allow_unregistered=True)
    except air.IRError as e:
        assert e.location is not None and e.message
        return
    printed = str(m)
    again = air.parse(printed, allow_unregistered=True)
    assert str(again) == printed
    assert air.structurally_equal(again, m)


def test_the_generic_seed_is_valid():
    m = air.parse(GENERIC_SEED, allow_unregistered=True)
    assert str(air.parse(str(m), allow_unregistered=True)) == str(m)
