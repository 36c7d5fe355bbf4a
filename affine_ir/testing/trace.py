"""Ground truth for analyses: execute a function's affine control flow and record accesses.

:func:`trace_accesses` walks the loops, ``affine.if`` guards and index computations of a
function with concrete symbol values and records every memory access in execution order:
which op, at which IV values, which memref element, read or write. Data values are not
computed (control flow and subscripts of affine programs do not depend on them), so it is
fast and exact; it is the brute-force oracle that isl-based dependence, region and slice
analyses are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import Operation, Value
from ..dialects import affine as A
from ..dialects.arith import ConstantOp
from ..dialects.func import FuncOp
from ..interfaces import AffineAccessInterface


@dataclass(frozen=True)
class Access:
    """One executed access: ``op`` at IV values ``ivs`` (outermost first) touched ``index``."""

    op: Operation
    ivs: tuple[int, ...]
    memref: Value
    index: tuple[int, ...]
    is_write: bool
    time: int  # position in execution order


class TraceError(Exception):
    """The function uses something the tracer cannot execute (non-affine control or index)."""


def trace_accesses(func: FuncOp, symbols: dict[Value, int] | None = None, limit: int = 1_000_000) -> list[Access]:
    """Every access of ``func`` in execution order, with index-typed arguments taken from
    ``symbols`` (missing ones raise TraceError). Stops with TraceError after ``limit`` accesses."""
    env: dict[Value, int] = dict(symbols or {})
    out: list[Access] = []
    _run_block(func.body.ops, env, [], out, limit)
    return out


def _run_block(ops, env, ivs, out, limit) -> None:
    for op in ops:
        _run_op(op, env, ivs, out, limit)


def _val(env, v: Value) -> int:
    try:
        return env[v]
    except KeyError:
        if isinstance(v.owner, Operation) and isinstance(v.owner, ConstantOp):
            return int(v.owner.value)
        raise TraceError(f"index value %{v.name_hint or '?'} has no known value") from None


def _eval_map(env, m, operands) -> tuple[int, ...]:
    vals = [_val(env, v) for v in operands]
    return m.evaluate(vals[: m.num_dims], vals[m.num_dims :])


def _run_op(op: Operation, env, ivs, out, limit) -> None:
    if isinstance(op, AffineAccessInterface):
        is_write = op.is_write
        out.append(Access(op, tuple(ivs), op.memref, _eval_map(env, op.map, op.indices), is_write, len(out)))
        if len(out) > limit:
            raise TraceError(f"more than {limit} accesses")
    elif isinstance(op, A.AffineForOp):
        lb = max(_eval_map(env, op.lower_bound_map, op.lower_bound_operands))
        ub = min(_eval_map(env, op.upper_bound_map, op.upper_bound_operands))
        for i in range(lb, ub, op.step):
            env[op.induction_var] = i
            _run_block(op.body.ops, env, ivs + [i], out, limit)
    elif isinstance(op, A.AffineParallelOp):
        _run_parallel(op, env, ivs, out, limit)
    elif isinstance(op, A.AffineIfOp):
        vals = [_val(env, v) for v in op.operands]
        s = op.condition
        taken = s.contains(vals[: s.num_dims], vals[s.num_dims :])
        block = op.then_block if taken else op.else_block
        if block is not None:
            _run_block(block.ops, env, ivs, out, limit)
    elif isinstance(op, A.AffineMapValueOp):
        res = _eval_map(env, op.map, op.operands)
        env[op.result] = res[0] if isinstance(op, A.AffineApplyOp) else (
            min(res) if isinstance(op, A.AffineMinOp) else max(res))
    elif isinstance(op, ConstantOp) and isinstance(op.value, int):
        env[op.result] = op.value
    elif op.name in ("memref.load", "memref.store"):
        raise TraceError(f"'{op.name}' has non-affine indices")
    elif op.regions and op.name not in ("affine.yield",):
        raise TraceError(f"cannot trace through '{op.name}'")


def _run_parallel(op: A.AffineParallelOp, env, ivs, out, limit) -> None:
    lower = _eval_map(env, op.attributes["lower_bounds"], op.lower_operands)
    upper = _eval_map(env, op.attributes["upper_bounds"], op.upper_operands)
    ranges, lk, uk = [], 0, 0
    for g_lo, g_hi, step in zip(op.attributes["lower_groups"], op.attributes["upper_groups"], op.steps):
        ranges.append(range(max(lower[lk : lk + g_lo]), min(upper[uk : uk + g_hi]), step))
        lk, uk = lk + g_lo, uk + g_hi

    def rec(k: int, prefix: list[int]) -> None:
        if k == len(ranges):
            for iv, x in zip(op.ivs, prefix):
                env[iv] = x
            _run_block(op.body.ops, env, ivs + prefix, out, limit)
            return
        for x in ranges[k]:
            rec(k + 1, prefix + [x])

    rec(0, [])
