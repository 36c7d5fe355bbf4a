"""The op graph: uses, clone, walk, erase, structural equality, names, Jupyter display."""

from __future__ import annotations

import pytest

import affine_ir as air
from affine_ir.builder import Builder
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from affine_ir.dialects.arith import ConstantOp

SHIFT = """
func.func @shift(%A: memref<64xf32>, %B: memref<63xf32>) {
  affine.for %i = 0 to 63 {
    %a = affine.load %A[%i] : memref<64xf32>
    %b = affine.load %A[%i + 1] : memref<64xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %B[%i] : memref<63xf32>
  }
  return
}
"""


def test_uses_are_tracked_and_replaced():
    m = air.parse(SHIFT)
    f = m.functions[0]
    a_arg, b_arg = f.args
    assert [u.op.name for u in a_arg.uses] == ["affine.load", "affine.load"]
    assert [u.op.name for u in b_arg.uses] == ["affine.store"]
    loop = f.body.ops[0]
    add = loop.body.ops[2]
    loads = loop.body.ops[:2]
    add.set_operand(1, loads[0].result)
    assert len(loads[1].result.uses) == 0
    assert len(loads[0].result.uses) == 2
    loads[0].result.replace_all_uses_with(loads[1].result)
    assert add.operands == (loads[1].result, loads[1].result)
    assert not loads[0].result.uses
    air.verify(m)


def test_walk_is_preorder():
    m = air.parse(SHIFT)
    names = [op.name for op in m.walk()]
    assert names == ["builtin.module", "func.func", "affine.for", "affine.load", "affine.load", "arith.addf",
                     "affine.store", "affine.yield", "func.return"]


def test_clone_is_deep_and_independent():
    m = air.parse(SHIFT)
    c = m.clone()
    assert air.structurally_equal(m, c)
    assert str(c) == str(m)
    # Mutating the clone leaves the original alone.
    loop = c.functions[0].body.ops[0]
    loop.attributes["step"] = 3
    assert not air.structurally_equal(m, c)
    assert "step 3" in str(c) and "step 3" not in str(m)
    # No value of the clone is a value of the original.
    orig_values = {id(r) for op in m.walk() for r in op.results}
    assert not any(id(r) in orig_values for op in c.walk() for r in op.results)
    for op in c.walk():
        for v in op.operands:
            assert id(v) not in orig_values


def test_erase_refuses_used_results_and_drops_uses():
    m = air.parse(SHIFT)
    loop = m.functions[0].body.ops[0]
    load = loop.body.ops[0]
    with pytest.raises(ValueError, match="still in use"):
        load.erase()
    store = loop.body.ops[3]
    store.erase()
    assert isinstance(loop.body.ops[2], air.Operation) and loop.body.ops[2].name == "arith.addf"
    add = loop.body.ops[2]
    add.erase()
    assert not load.result.uses
    air.verify(m)


def test_structural_equality_sees_dataflow_differences():
    a = air.parse(SHIFT)
    b = air.parse(SHIFT.replace("%s = arith.addf %a, %b", "%s = arith.addf %b, %a"))
    assert not air.structurally_equal(a, b)
    c = air.parse(SHIFT.replace("%i + 1]", "%i + 2]").replace("64xf32", "65xf32"))
    assert not air.structurally_equal(a, c)
    assert air.structurally_equal(a, air.parse(SHIFT.replace("%s", "%sum")))


def test_names_made_unique_and_numbered():
    b = Builder()
    with b.function("f", A=b.memref(8)) as (A,):
        with b.affine_for(0, 4, name="i") as i:
            b.store(b.load(A, [i], name="x"), A, [i + 4])
        with b.affine_for(0, 4, name="i") as i:
            v = b.load(A, [i])
            b.store(b.addf(v, b.constant(1.0)), A, [i])
    text = str(b.module)
    assert "affine.for %i = 0 to 4" in text and "affine.for %i_0 = 0 to 4" in text
    assert "%x = affine.load %A[%i]" in text
    assert "%0 = affine.load %A[%i_0]" in text
    assert "%cst = arith.constant 1.000000e+00 : f32" in text
    again = air.parse(text)
    assert str(again) == text


def test_printing_a_nested_op_names_outer_values():
    m = air.parse(SHIFT)
    loop = m.functions[0].body.ops[0]
    text = str(loop)
    assert text.startswith("affine.for %i = 0 to 63 {")
    assert "affine.load %A[%i + 1]" in text


def test_repr_and_html():
    m = air.parse(SHIFT)
    assert repr(m) == "<module with 1 ops: @shift>"
    loop = m.functions[0].body.ops[0]
    assert repr(loop).startswith("<affine.for (0 operands) -> () at <string>:3:3")
    html = m._repr_html_()
    assert html.startswith("<pre") and "affine.for" in html and "&lt;64xf32&gt;" in html
    assert "<script" not in air.parse(SHIFT.replace("@shift", '@"x<script>"'))._repr_html_()


def test_locations_point_at_ops():
    m = air.parse(SHIFT, "shift.mlir")
    loop = m.functions[0].body.ops[0]
    assert (loop.location.file, loop.location.line, loop.location.col) == ("shift.mlir", 3, 3)
    load = loop.body.ops[1]
    assert str(load.location) == "shift.mlir:5:5"


def test_op_accessors():
    m = air.parse(SHIFT)
    loop = m.functions[0].body.ops[0]
    assert isinstance(loop, AffineForOp)
    assert loop.constant_bounds == (0, 63) and loop.constant_trip_count == 63 and loop.step == 1
    load = loop.body.ops[1]
    assert isinstance(load, AffineLoadOp)
    assert str(load.map) == "(d0) -> (d0 + 1)" and load.indices == (loop.induction_var,)
    store = loop.body.ops[3]
    assert isinstance(store, AffineStoreOp) and store.value is loop.body.ops[2].result
    c = ConstantOp.of(2.5, air.types.f16)
    assert c.value == 2.5 and str(c.result.type) == "f16"


def test_verify_catches_api_built_dominance_error():
    m = air.parse(SHIFT)
    loop = m.functions[0].body.ops[0]
    load = loop.body.ops[0]
    add = loop.body.ops[2]
    load.detach()
    loop.body.insert_after(add, load)
    with pytest.raises(air.VerifyError, match="does not dominate"):
        air.verify(m)


# ----- block and use-list costs ------------------------------------------------------------------
def _constants(n: int) -> list[ConstantOp]:
    return [ConstantOp.of(k, air.types.index) for k in range(n)]


def test_block_keeps_list_semantics_under_edits():
    block = air.Block()
    ops = _constants(6)
    for op in ops[:3]:
        block.append(op)
    block.insert(0, ops[3])             # front
    block.insert_after(ops[0], ops[4])  # middle
    block.insert(-1, ops[5])            # before the last, as list.insert
    want = [ops[3], ops[0], ops[4], ops[1], ops[5], ops[2]]
    assert list(block.ops) == want and block.ops == want and len(block.ops) == 6
    assert block.ops[0] is ops[3] and block.ops[-1] is ops[2] and block.ops[1:3] == want[1:3]
    assert list(reversed(block.ops)) == want[::-1]
    assert [block.index_of(o) for o in want] == list(range(6)) and block.ops.index(ops[4]) == 2
    assert block.is_before(ops[3], ops[2]) and not block.is_before(ops[2], ops[5])
    assert ops[0].next_op is ops[4] and ops[4].prev_op is ops[0] and ops[3].prev_op is None
    ops[4].detach()
    assert ops[4] not in block.ops and ops[0] in block.ops and block.index_of(ops[1]) == 2
    with pytest.raises(ValueError, match="not in this block"):
        block.insert_before(ops[4], _constants(1)[0])
    with pytest.raises(ValueError, match="already in a block"):
        block.append(ops[0])
    block.ops.clear()
    assert not block.ops and block.terminator is None and all(o.parent is None for o in ops)


def test_block_edits_and_order_queries_do_not_scan_the_block(monkeypatch):
    """Insertion before/after an op, removal, the terminator and ``is_before`` are O(1)
    (amortized): none of them lists the block's ops (``index_of`` once did, for each edit)."""
    block = air.Block()
    ops = _constants(2000)
    for op in ops[:1000]:
        block.append(op)
    scans = []
    real = air.Block._array
    monkeypatch.setattr(air.Block, "_array", lambda self: scans.append(1) or real(self))
    middle = ops[500]
    for op in ops[1000:1500]:
        block.insert_before(middle, op)   # always in the middle: keys run out, renumbered lazily
        assert block.is_before(op, middle) and block.is_before(ops[0], op)
    for op in ops[1500:]:
        block.insert_after(ops[999], op)
    for op in ops[1000:1500:2]:
        op.detach()
    assert block.terminator is None and len(block.ops) == 1750
    assert scans == []
    assert block.ops[0] is ops[0] and block.ops[-1] is ops[1500]  # the ends need no scan either
    assert scans == []
    monkeypatch.undo()
    assert list(block.ops) == [*ops[:500], *ops[1001:1500:2], *ops[500:1000], *ops[1999:1499:-1]]


def test_replacing_uses_does_not_rescan_the_use_list():
    """``replace_all_uses_with`` and ``set_operand`` touch each use once: dropping a use once
    rebuilt the whole use list (quadratic for a value with many users, such as a fully
    unrolled loop's IV)."""

    class CountingList(list):
        scans = 0

        def __iter__(self):
            CountingList.scans += 1
            return super().__iter__()

    c, d = _constants(2)
    users = [air.dialects.arith.OPS["addi"](c.result, c.result) for _ in range(500)]
    c.result.uses = CountingList(c.result.uses)
    c.result.replace_all_uses_with(d.result)
    assert CountingList.scans <= 2  # a constant number of passes, not one per use
    assert not c.result.uses and len(d.result.uses) == 1000
    assert all(u.operands == (d.result, d.result) for u in users)
    d.result.uses = CountingList(d.result.uses)
    CountingList.scans = 0
    for u in users:
        u.set_operand(1, c.result)
    users[0].erase()
    assert CountingList.scans == 0 and len(d.result.uses) == 499 and len(c.result.uses) == 499


def test_an_op_without_custom_syntax_prints_in_the_generic_form_and_parses_back():
    from affine_ir.core import OP_REGISTRY, Operation

    class Pair(Operation):
        name = "test.pair"
        # the parser adds the attributes itself
        from_generic = classmethod(lambda cls, operands, types, attrs, loc: cls(list(operands), list(types),
                                                                                 location=loc))

    try:
        text = ('func.func @f(%a: f32) -> f32 {\n  %0 = "test.pair"(%a, %a) {k = 3 : i64} : (f32, f32) -> f32\n'
                '  return %0 : f32\n}')
        m = air.parse(text)
        assert '"test.pair"(%a, %a) {k = 3 : i64} : (f32, f32) -> f32' in str(m)
        assert str(air.parse(str(m))) == str(m)
    finally:
        OP_REGISTRY.pop("test.pair", None)
