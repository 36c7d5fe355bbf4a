"""Loop helpers shared by the transforms: names for messages, bands, functions, subscripts, memory
spaces from option text (none of these changes the IR); :func:`rewrite_access`, which moves an
affine access onto a buffer holding a region of its memref (copy generation, private memrefs of
fusion); and the one mechanism behind every single-iteration promotion:
:func:`lower_bound_value` materializes the value of a loop's lower bound before the loop;
:func:`inline_block_before` moves a block's ops before an anchor; :func:`inline_loop_body`
replaces a loop that runs once by its body (the IV by a given value, ``iter_args`` by their
inits, the results by the yielded values). canonicalize, affine-loop-normalize and
affine-loop-unroll each decide *when* a loop runs once and *how* the IV's value is written;
these helpers do the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from affine_ir import AffineExpr, AffineMap, Block, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineMapValueOp, AffineMaxOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.rewrite import PatternRewriter
from affine_ir.types import GPUAddressSpace, index
from analysis import MemRefRegion, perfect_band

__all__ = ["ACCESS_OPS", "MAP_VALUE_OPS", "access_subscripts", "all_loops", "at_location", "defined_in",
           "depends_on", "enclosing_function", "index_expr", "inline_block_before", "inline_loop_body", "loop_name",
           "loops_text", "lower_bound_value", "outermost_bands", "parse_memory_space", "rebuild_loop", "rewrite_access",
           "top_level_loops", "value_name"]


# The old names of the classes to ask (kept importable; ``isinstance`` takes them as before):
#: The affine memref accesses (``memref``, ``map``, ``indices``, ``set_access``): the interface.
ACCESS_OPS = AffineAccessInterface
#: The ops whose result is an affine map applied to their operands (``map``, ``operands``).
MAP_VALUE_OPS = AffineMapValueOp


def value_name(v: Value) -> str:
    """``%name`` from the value's name hint (``%arg<k>`` / ``%<op>#<k>`` without one), for messages."""
    if v.name_hint:
        return f"%{v.name_hint}"
    owner = v.owner
    if isinstance(owner, Operation):
        return f"%{owner.name}#{v.index}"
    return f"%arg{v.index}"


def at_location(op: Operation) -> str:
    """`` at file:line:col`` for a located op, '' otherwise (for messages)."""
    return f" at {op.location}" if op.location else ""


def loop_name(loop: Operation) -> str:
    """The name of a loop's IV (``%i``), or the op name for a loop without one."""
    if isinstance(loop, AffineForOp):
        return value_name(loop.induction_var)
    return loop.name


def loops_text(loops: Sequence[Operation]) -> str:
    """``(%i, %j)``: the loops' IV names, for messages."""
    return "(" + ", ".join(loop_name(x) for x in loops) + ")"


def enclosing_function(op: Operation) -> FuncOp | None:
    """The ``func.func`` containing ``op`` (``op`` itself if it is one), or None."""
    while op is not None and not isinstance(op, FuncOp):
        op = op.parent_op
    return op


def defined_in(v: Value, op: Operation) -> bool:
    """Whether ``v`` is defined by ``op``, inside it, or is an argument of one of its blocks."""
    owner = v.owner
    where = owner if isinstance(owner, Operation) else owner.parent_op
    return where is not None and (where is op or op.is_ancestor_of(where))


def top_level_loops(func: Operation) -> list[AffineForOp]:
    """The ``affine.for`` ops directly in the body of ``func`` (or of any op), in order."""
    return [op for region in func.regions for block in region.blocks for op in block.ops
            if isinstance(op, AffineForOp)]


def outermost_bands(func: Operation) -> list[list[AffineForOp]]:
    """The perfectly nested band of each top-level ``affine.for`` of ``func`` (MLIR's
    ``getTileableBands``), in program order."""
    return [perfect_band(loop) for loop in top_level_loops(func)]


def all_loops(root: Operation) -> Iterator[AffineForOp]:
    """Every ``affine.for`` under ``root`` (pre-order)."""
    for op in root.walk():
        if isinstance(op, AffineForOp):
            yield op


def index_expr(v: Value, leaves: list[Value]) -> AffineExpr:
    """``v`` as an affine expression over ``leaves`` (dims; appended to when ``v`` reaches a new
    value), through ``affine.apply`` ops and integer constants."""
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, int) and not isinstance(owner.value, bool):
        return AffineExpr.constant(int(owner.value))
    if isinstance(owner, AffineApplyOp):
        args = [index_expr(x, leaves) for x in owner.operands]
        m = owner.map
        return m.results[0].replace(args[: m.num_dims], args[m.num_dims:])
    for k, x in enumerate(leaves):
        if x is v:
            return AffineExpr.dim(k)
    leaves.append(v)
    return AffineExpr.dim(len(leaves) - 1)


def access_subscripts(op: Operation, leaves: list[Value]) -> tuple[AffineExpr, ...]:
    """The subscripts of an affine access as expressions over ``leaves`` (see :func:`index_expr`):
    ``A[%t]`` with ``%t = affine.apply (d0) -> (d0 + 1)(%i)`` gives ``(d0 + 1,)`` over ``[%i]``."""
    args = [index_expr(v, leaves) for v in op.indices]
    m = op.map
    return tuple(e.replace(args[: m.num_dims], args[m.num_dims:]) for e in m.results)


def lower_bound_value(loop: AffineForOp, *, name_hint: str | None = None, constant_at_entry: bool = False) -> Value:
    """A value equal to ``loop``'s lower bound, available before the loop: an ``arith.constant``
    (before the loop, or at the top of the function with ``constant_at_entry``), the bound's
    operand itself for a one-result identity bound, an ``affine.apply`` for one result, an
    ``affine.max`` of all the results for several (never one of its terms)."""
    m, ops = loop.lower_bound_map, loop.lower_bound_operands
    if m.is_single_constant:
        const = ConstantOp.of(m.single_constant(), index, location=loop.location)
        func = enclosing_function(loop) if constant_at_entry else None
        if func is not None:
            func.body.insert(0, const)
        else:
            loop.parent.insert_before(loop, const)
        return const.result
    if m.num_results == 1 and m.num_inputs == 1 and m.results[0] in (AffineExpr.dim(0), AffineExpr.symbol(0)):
        return ops[0]  # a max bound is the operand only when it is the bound's one result
    kind = AffineApplyOp if m.num_results == 1 else AffineMaxOp
    new = kind(m, ops, location=loop.location, name_hint=name_hint)
    loop.parent.insert_before(loop, new)
    return new.results[0]


def inline_block_before(block: Block, anchor: Operation, arg_values: list[Value]) -> list[Value]:
    """Move the ops of ``block`` (but its terminator) before ``anchor``, its arguments replaced by
    ``arg_values``; returns the terminator's operands (the values the block yields)."""
    for a, v in zip(block.args, arg_values):
        a.replace_all_uses_with(v)
    term = block.terminator
    yielded = list(term.operands) if term is not None else []
    parent = anchor.parent
    for op in list(block.ops):
        if op is term:
            continue
        op.detach()
        parent.insert_before(anchor, op)
    return yielded


def inline_loop_body(loop: AffineForOp, iv_value: Value) -> None:
    """Replace ``loop`` (which must run exactly once) by its body: the IV by ``iv_value``, the
    ``iter_args`` by the inits, the loop's results by the yielded values; the loop is erased."""
    yielded = inline_block_before(loop.body, loop, [iv_value, *loop.inits])
    for r, v in zip(loop.results, yielded):
        r.replace_all_uses_with(v)
    loop.erase()


def parse_memory_space(space: int | str | GPUAddressSpace | None):
    """The memory-space attribute of a memref type for ``space``: None for 0 (the default space),
    an int, or ``#gpu.address_space<workgroup|private|global>`` for those names (or that text)."""
    if space is None or isinstance(space, GPUAddressSpace):
        return space
    if isinstance(space, int):
        return None if space == 0 else space
    text = str(space).strip()
    if text.startswith("#gpu.address_space<") and text.endswith(">"):
        text = text[len("#gpu.address_space<") : -1]
    if text in ("workgroup", "private", "global"):
        return GPUAddressSpace(text)
    try:
        return parse_memory_space(int(text, 0))
    except ValueError:
        raise ValueError(f"unknown memory space '{space}' (an integer, workgroup, private or global)") from None


def rewrite_access(op: AffineAccessInterface, buffer: Value, region: MemRefRegion) -> None:
    """Make the access ``op`` (an ``affine.load/store``, vector forms too) use ``buffer``: the
    subscript ``f(...)`` becomes ``f(...) - lb`` with the region's lower bound ``lb`` composed in
    (its outer IVs and symbols appended to the map's operands)."""
    m = op.map
    idx = list(op.indices)
    nd_o, ns_o = m.num_dims, m.num_symbols
    nd_r = region.depth
    r_ops = list(region.lower_bound_operands)
    ns_r = len(r_ops) - nd_r
    results = []
    for k, e in enumerate(m.results):
        lb = region.lower_bounds[k].results[0].replace(
            [AffineExpr.dim(nd_o + i) for i in range(nd_r)], [AffineExpr.symbol(ns_o + j) for j in range(ns_r)])
        results.append(e - lb)
    new_map = AffineMap(nd_o + nd_r, ns_o + ns_r, tuple(results))
    operands = [*idx[:nd_o], *r_ops[:nd_r], *idx[nd_o:], *r_ops[nd_r:]]
    op.set_operand(op.memref_index, buffer)
    op.set_access(new_map, operands)


def rebuild_loop(loop: AffineForOp, keep: list[int], rewriter: PatternRewriter | None = None) -> AffineForOp:
    """Replace ``loop`` by a copy with only the iter_args ``keep`` (positions; the others and their
    results must be unused, the yield already without their operands), the body moved into it;
    returns the new loop (through ``rewriter`` when given, so a driver sees the changes)."""
    rewriter = rewriter or PatternRewriter()
    body = loop.body
    inits = [loop.inits[k] for k in keep]
    new = AffineForOp(loop.lower_bound_map, loop.lower_bound_operands, loop.upper_bound_map,
                      loop.upper_bound_operands, loop.step, inits, iv_name=body.args[0].name_hint,
                      iter_arg_names=[body.args[k + 1].name_hint for k in keep], location=loop.location)
    for key, value in loop.attributes.items():
        new.attributes.setdefault(key, value)
    for r_old, r_new in zip([loop.results[k] for k in keep], new.results):
        r_new.name_hint = r_old.name_hint
    nb = new.body
    for op in list(nb.ops):  # the empty yield the constructor may have added (not in the IR yet)
        op.erase()
    old_args = [body.args[0], *(body.args[k + 1] for k in keep)]
    for a, b in zip(old_args, nb.args):
        rewriter.replace_all_uses_with(a, b)
    rewriter.insert_op_before(loop, new)
    rewriter.set_insertion_point_to_end(nb)
    for op in list(body.ops):
        op.detach()
        rewriter.insert(op)
    for r_old, r_new in zip([loop.results[k] for k in keep], new.results):
        rewriter.replace_all_uses_with(r_old, r_new)
    rewriter.erase_op(loop)
    return new


def depends_on(value: Value, iv: Value) -> bool:
    """Whether ``value`` is ``iv`` or computed from it (through the ops that define it)."""
    seen, stack = set(), [value]
    while stack:
        v = stack.pop()
        if v is iv:
            return True
        op = getattr(v, "op", None)
        if op is None or op in seen:
            continue
        seen.add(op)
        stack.extend(op.operands)
    return False
