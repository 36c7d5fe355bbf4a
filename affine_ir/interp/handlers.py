"""How each op is translated: one handler per op name, called with the
:class:`~affine_ir.interp.translate.FunctionTranslator` and the op. Elementwise arith and
math ops go through :mod:`.ops` templates instead."""

from __future__ import annotations

import math

from ..affine_expr import AffineExpr
from ..affine_map import AffineMap
from ..attributes import DenseAttr
from ..dialects.affine_parallel import REDUCTION_ARITH_OPS
from ..dialects.nvgpu import is_shared
from ..types import MemRefType, VectorType, element_type_of
from . import gpu, hopper_ops, warp
from . import semantics as S
from .memory import from_list
from .ops import TEMPLATES, int_literal, reduction_identity
from .semantics import ScalarInfo, scalar_info
from .translate import FunctionTranslator, float_literal, index_expr, py_affine, range_max, range_min


def _constant(tr: FunctionTranslator, op) -> None:
    res = op.results[0]
    a = op.attributes["value"]
    t = res.type
    if isinstance(a, DenseAttr) or isinstance(t, VectorType):
        info = scalar_info(t.element_type)
        vals = [_scalar_const(x, info) for x in a.values]
        n = math.prod(t.shape)
        arr = from_list(vals * n if len(vals) == 1 else vals, info.np_dtype, t.shape)
        arr.flags.writeable = False
        tr.exprs[res] = tr.glob(arr, "K")
        return
    info = scalar_info(t)
    x = _scalar_const(a.value, info)
    if info.is_float:
        tr.exprs[res] = float_literal(x)
    else:
        tr.exprs[res], tr.consts[res], tr.ranges[res] = int_literal(x), x, (x, x)


def _scalar_const(x, info: ScalarInfo):
    return S.ROUNDERS[info.name](float(x)) if info.is_float else S.wrap(int(x), info.width)


def _for(tr: FunctionTranslator, op) -> None:
    lbs, ln, lr = tr.lower_map(op.lower_bound_map, op.lower_bound_operands)
    ubs, un, ur = tr.lower_map(op.upper_bound_map, op.upper_bound_operands)
    lb = _combine("max", [py_affine(e, ln) for e in lbs])
    ub = _combine("min", [py_affine(e, un) for e in ubs])
    lo = range_max([e.bounds(lr) for e in lbs])[0]
    hi = range_min([e.bounds(ur) for e in ubs])[1]
    iv = tr.define(op.induction_var)
    tr.ranges[op.induction_var] = (lo, None if hi is None else hi - 1)
    iters = [tr.define(a) for a in op.iter_args]
    for name, init in zip(iters, op.inits):
        tr.emit(f"{name} = {tr.val(init)}")
    step = f", {op.step}" if op.step != 1 else ""
    rng = f"range({ub})" if lb == "0" and not step else f"range({lb}, {ub}{step})"
    tr.emit(f"for {iv} in {rng}:")
    tr.indent += 1
    for a in op.iter_args:
        tr.bind_value(a)
    tr.block(op.body, lambda y: _assign_many(tr, iters, [tr.val(v) for v in y.operands]))
    tr.indent -= 1
    tr.cur = tr.op_info(op)
    for r, name in zip(op.results, iters):
        tr.exprs[r] = name
        tr.bind_value(r)


def _combine(fn: str, parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{fn}({', '.join(parts)})"


def _assign_many(tr: FunctionTranslator, names: list[str], values: list[str]) -> None:
    pairs = [(n, v) for n, v in zip(names, values) if n != v]
    if pairs:
        tr.emit(f"{', '.join(n for n, _ in pairs)} = {', '.join(v for _, v in pairs)}")


def _if(tr: FunctionTranslator, op) -> None:
    s = op.condition
    cons, names, _ = tr.lower_map(AffineMap(s.num_dims, s.num_symbols, s.constraints), op.operands)
    conds = [f"{py_affine(c, names)} {'==' if eq else '>='} 0" for c, eq in zip(cons, s.eq_flags)]
    results = [tr.fresh(tr.ir_name(r).lstrip("%").replace("#", "_")) for r in op.results]
    tr.emit(f"if {' and '.join(conds) or 'True'}:")
    tr.indent += 1
    tr.block(op.then_block, lambda y: _assign_many(tr, results, [tr.val(v) for v in y.operands]))
    tr.indent -= 1
    if op.else_block is not None:
        tr.cur = tr.op_info(op)
        tr.emit("else:")
        tr.indent += 1
        tr.block(op.else_block, lambda y: _assign_many(tr, results, [tr.val(v) for v in y.operands]))
        tr.indent -= 1
    tr.cur = tr.op_info(op)
    for r, name in zip(op.results, results):
        tr.exprs[r] = name
        tr.bind_value(r)


def _parallel(tr: FunctionTranslator, op) -> None:
    a = op.attributes
    lbs, ln, lr = tr.lower_map(a["lower_bounds"], op.lower_operands)
    ubs, un, ur = tr.lower_map(a["upper_bounds"], op.upper_operands)
    accs = []
    for r, kind in zip(op.results, op.reductions):
        info = scalar_info(element_type_of(r.type))
        identity = reduction_identity(kind, info)
        if isinstance(r.type, VectorType):  # reduced elementwise
            identity = f"_M.vbroadcast({identity}, {tr.glob(info.np_dtype, f'DT_{info.name}')}, {r.type.shape!r})"
        accs.append(tr.define(r))
        tr.emit(f"{accs[-1]} = {identity}")
    depth = 0
    for iv, lg, ug, step in zip(op.ivs, a["lower_groups"], a["upper_groups"], op.steps):
        lgroup, lbs = lbs[:lg], lbs[lg:]
        ugroup, ubs = ubs[:ug], ubs[ug:]
        name = tr.define(iv)
        lo = range_max([e.bounds(lr) for e in lgroup])[0]
        hi = range_min([e.bounds(ur) for e in ugroup])[1]
        tr.ranges[iv] = (lo, None if hi is None else hi - 1)
        lb = _combine("max", [py_affine(e, ln) for e in lgroup])
        ub = _combine("min", [py_affine(e, un) for e in ugroup])
        tr.emit(f"for {name} in range({lb}, {ub}{f', {step}' if step != 1 else ''}):")
        tr.indent += 1
        depth += 1

    def on_yield(y):
        for acc, r, kind, v in zip(accs, op.results, op.reductions, y.operands):
            info = scalar_info(element_type_of(r.type))
            template = TEMPLATES[REDUCTION_ARITH_OPS[kind]]
            if isinstance(r.type, VectorType):
                tr.assign_name(acc, tr.vector_map(template, op, [acc, tr.val(v)], info, info))
                continue
            expr, rounds = template([acc, tr.val(v)], op, info, info)
            tr.assign_name(acc, expr, info if rounds and info.is_float else None)

    tr.block(op.body, on_yield)
    tr.indent -= depth
    tr.cur = tr.op_info(op)


def _access_indices(tr: FunctionTranslator, op) -> tuple[list[AffineExpr], list[str], list]:
    if isinstance(getattr(op, "map", None), AffineMap):
        return tr.lower_map(op.map, op.indices)
    return tr.lower_map(AffineMap.identity(len(op.indices)), op.indices)


def _turn(tr: FunctionTranslator, op) -> None:
    """A point where :func:`~.gpu.interleaved_schedule` lets the next thread run: before a load or store (scalar
    or ``affine.vector_*``) of shared memory in a launch whose threads synchronize (their bodies are
    generators)."""
    if tr.gpu is not None and tr.gpu.barriers and is_shared(op.memref.type):
        tr.emit(f"if _G.INTERLEAVED[0]: yield ({gpu._PREEMPTED}, None)")


def _load(tr: FunctionTranslator, op) -> None:
    _turn(tr, op)
    mem = tr.mem(op.memref)
    lin = tr.element_index(mem, *_access_indices(tr, op))
    tr.assign(op.results[0], tr.load_expr(mem, lin))


def _store(tr: FunctionTranslator, op) -> None:
    _turn(tr, op)
    mem = tr.mem(op.memref)
    lin = tr.element_index(mem, *_access_indices(tr, op))
    tr.store(mem, lin, tr.val(op.value))


def _atomic_rmw(tr: FunctionTranslator, op) -> None:
    """``memref.atomic_rmw``: the old element is the result; the element becomes ``kind(old, value)``
    (the emulation runs one thread at a time, so the step is indivisible)."""
    from ..dialects.memref import ATOMIC_RMW_KINDS

    mem = tr.mem(op.memref)
    lin = tr.element_index(mem, *_access_indices(tr, op))
    old = tr.assign(op.results[0], tr.load_expr(mem, lin))
    info = scalar_info(op.results[0].type)
    expr, rounds = TEMPLATES[ATOMIC_RMW_KINDS[op.kind]]([old, tr.val(op.value)], op, info, info)
    new = tr.fresh("atomic")
    tr.assign_name(new, expr, info if rounds and info.is_float else None)
    tr.store(mem, lin, new)


def _index_tuple(tr: FunctionTranslator, op) -> str:
    exprs, names, _ = _access_indices(tr, op)
    return "(" + "".join(f"{py_affine(e, names)}, " for e in exprs) + ")"


def _vector_load(tr: FunctionTranslator, op) -> None:
    _turn(tr, op)
    shape = op.results[0].type.shape
    tr.assign(op.results[0], f"_M.vload({tr.mem(op.memref).name}, {_index_tuple(tr, op)}, {tuple(shape)})")


def _vector_store(tr: FunctionTranslator, op) -> None:
    _turn(tr, op)
    tr.emit(f"_M.vstore({tr.mem(op.memref).name}, {_index_tuple(tr, op)}, {tr.val(op.value)})")


def _apply(tr: FunctionTranslator, op) -> None:
    exprs, names, ranges = tr.lower_map(op.map, op.operands)
    if op.name == "affine.apply" or len(exprs) == 1:
        tr.set_index(op.results[0], exprs[0], names, ranges)
        return
    fn = "min" if op.name == "affine.min" else "max"
    parts = [index_expr(e, names, ranges) for e in exprs]
    tr.assign(op.results[0], _combine(fn, [expr for expr, _ in parts]))
    rs = [r for _, r in parts]
    tr.ranges[op.results[0]] = range_min(rs) if fn == "min" else range_max(rs)


def _alloc(tr: FunctionTranslator, op) -> None:
    if op.name == "memref.alloc" and gpu.workgroup_alloc(tr, op):
        return
    t: MemRefType = op.results[0].type
    dyn = iter(op.operands)
    sizes = [str(d) if d is not None else tr.val(next(dyn)) for d in t.shape]
    info = scalar_info(t.element_type)
    ginfo = tr.glob(info, f"I_{info.name}")
    tr.assign(op.results[0], f"_M.alloc({ginfo}, ({''.join(s + ', ' for s in sizes)}))")
    tr.bind_value(op.results[0])


def _dealloc(tr: FunctionTranslator, op) -> None:
    tr.emit(f"_M.dealloc({tr.mem(op.operands[0]).name})")


def _dim(tr: FunctionTranslator, op) -> None:
    mem = tr.mem(op.operands[0])
    k = tr.consts.get(op.operands[1])
    res = op.results[0]
    if k is not None and 0 <= k < len(mem.dims):
        d = mem.dims[k]
        if isinstance(d, int):
            tr.exprs[res], tr.consts[res], tr.ranges[res] = str(d), d, (d, d)
            return
        tr.exprs[res] = d
    else:
        tr.assign(res, f"_M.dim({mem.name}, {tr.val(op.operands[1])})")
    tr.ranges[res] = (0, None)


def _load_store_memref(tr: FunctionTranslator, op) -> None:
    (_load if op.name == "memref.load" else _store)(tr, op)


def _call(tr: FunctionTranslator, op) -> None:
    callee = tr.module.pyname(op.callee)
    args = ", ".join(tr.val(v) for v in op.operands)
    if callee is None:
        tr.emit(f"raise _Unsupported({f'cannot call @{op.callee}: no such function in the module'!r})")
        for r in op.results:
            tr.exprs[r] = "None"
            tr.bind_value(r)
        return
    if not op.results:
        tr.emit(f"{callee}({args})")
        return
    names = [tr.define(r) for r in op.results]
    tr.emit(f"{', '.join(names)}, = {callee}({args})")
    for r in op.results:
        tr.bind_value(r)


def _return(tr: FunctionTranslator, op) -> None:
    tr.emit(f"return ({''.join(tr.val(v) + ', ' for v in op.operands)})")


def _broadcast(tr: FunctionTranslator, op) -> None:
    t: VectorType = op.results[0].type
    dt = tr.glob(scalar_info(t.element_type).np_dtype, f"DT_{t.element_type}")
    tr.assign(op.results[0], f"_M.vbroadcast({tr.val(op.operands[0])}, {dt}, {tuple(t.shape)})")


def _reduction(tr: FunctionTranslator, op) -> None:
    info = scalar_info(op.results[0].type)
    ginfo = tr.glob(info, f"I_{info.name}")
    tr.assign(op.results[0], f"_M.vreduce({op.kind!r}, {tr.val(op.operands[0])}, {ginfo})")


def _extract(tr: FunctionTranslator, op) -> None:
    pos = tuple(op.position)
    v = tr.val(op.operands[0])
    if isinstance(op.results[0].type, VectorType):
        tr.assign(op.results[0], f"{v}[{pos!r}].copy()")
    else:
        tr.assign(op.results[0], f"_M.to_list({v}[{pos!r}])[0]")


def _extract_strided_slice(tr: FunctionTranslator, op) -> None:
    box = tuple(slice(o, o + n) for o, n in zip(op.offsets, op.sizes))
    tr.assign(op.results[0], f"{tr.val(op.operands[0])}[{box!r}].copy()")


def _insert(tr: FunctionTranslator, op) -> None:
    x, v = (tr.val(w) for w in op.operands)
    tr.assign(op.results[0], f"_M.vinsert({v}, {tuple(op.position)!r}, {x})")


HANDLERS = {
    "arith.constant": _constant,
    "affine.for": _for,
    "affine.if": _if,
    "affine.parallel": _parallel,
    "affine.load": _load,
    "affine.store": _store,
    "affine.vector_load": _vector_load,
    "affine.vector_store": _vector_store,
    "affine.apply": _apply,
    "affine.min": _apply,
    "affine.max": _apply,
    "memref.alloc": _alloc,
    "memref.alloca": _alloc,
    "memref.dealloc": _dealloc,
    "memref.dim": _dim,
    "memref.load": _load_store_memref,
    "memref.store": _load_store_memref,
    "memref.atomic_rmw": _atomic_rmw,
    "func.call": _call,
    "func.return": _return,
    "vector.broadcast": _broadcast,
    "vector.reduction": _reduction,
    "vector.extract": _extract,
    "vector.insert": _insert,
    "vector.extract_strided_slice": _extract_strided_slice,
    **gpu.HANDLERS,
    **warp.HANDLERS,
    **hopper_ops.HANDLERS,
}
