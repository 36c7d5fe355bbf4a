"""Translation of the matrix-unit and asynchronous-copy ops (``gpu.subgroup_mma_*``, ``nvgpu.*``).

Warp-collective ops (:class:`~affine_ir.traits.SubgroupCollective`: ``gpu.subgroup_mma_load_matrix/
store_matrix/compute``, ``nvgpu.ldmatrix``, ``nvgpu.mma.sync``) make the launch body run as one
generator per thread (see :mod:`.gpu`): the op becomes ``result = yield (k, operands)``; the block's
scheduler waits until all 32 lanes of the warp are at the op, runs it once with their operands
(:class:`Collective`) and sends each lane its result. The ``gpu.subgroup_mma_*`` ops take one value
per warp: the lanes must give equal operands (the same matrices, memref and indices), else an
InterpretError names the op. ``gpu.subgroup_mma_constant_matrix`` and ``_elementwise`` compute on
values alone, so each lane computes them on its copy of the matrix. Asynchronous copies go through
the thread's :class:`~.mma.AsyncCopies` (performed when a wait retires them).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..core import Operation
from . import mma as W
from .ops import TEMPLATES, wrap_expr
from .semantics import scalar_info

#: ``gpu.subgroup_mma_elementwise`` kind -> the arith op whose scalar semantics it has.
ELEMENTWISE_ARITH = {
    "addf": "arith.addf", "mulf": "arith.mulf", "subf": "arith.subf", "maxf": "arith.maximumf",
    "minf": "arith.minimumf", "divf": "arith.divf", "addi": "arith.addi", "muli": "arith.muli", "subi": "arith.subi",
    "divs": "arith.divsi", "divu": "arith.divui", "negatef": "arith.negf", "extf": "arith.extf",
    "truncf": "arith.truncf",
}


@dataclass(frozen=True)
class Collective:
    """A collective op of a launch body: ``desc`` names it; ``run`` maps the operands of the ``lanes``
    threads that execute it together (32: a warp; 128: a warpgroup), in lane order, to their results."""

    desc: str
    run: object
    lanes: int = 32

    def __str__(self) -> str:
        return self.desc


def _collective(tr, op: Operation, fn, payload: str) -> None:
    if tr.gpu is None or tr.gpu.barriers is None:
        tr.unsupported(op, "outside a gpu.launch: the 32 lanes of a warp execute it together")
        return
    k = tr.gpu.barriers[id(op)]
    tr.gpu.collectives[k] = Collective(f"'{op.name}'" + (f" at {op.location}" if op.location else ""), fn)
    if op.results:
        name = tr.define(op.results[0])
        tr.emit(f"{name} = yield ({k}, {payload})")
    else:
        tr.emit(f"yield ({k}, {payload})")


def _indexed(tr, memref, indices) -> str:
    """``(buffer, (i, j, ))`` of a memref operand and its index operands."""
    return f"({tr.mem(memref).name}, ({''.join(tr.val(v) + ', ' for v in indices)}))"


def _lead(op: Operation) -> tuple[int, bool]:
    return op.attributes["leadDimension"].value, "transpose" in op.attributes


def _load_matrix(tr, op) -> None:
    lead, transpose = _lead(op)
    fn = functools.partial(W.load_matrix, shape=op.results[0].type.shape, lead=lead, transpose=transpose)
    _collective(tr, op, fn, _indexed(tr, op.operands[0], op.operands[1:]))


def _store_matrix(tr, op) -> None:
    lead, transpose = _lead(op)
    fn = functools.partial(W.store_matrix, lead=lead, transpose=transpose)
    v, m, *idx = op.operands
    _collective(tr, op, fn, f"({tr.val(v)}, {tr.mem(m).name}, ({''.join(tr.val(i) + ', ' for i in idx)}))")


def _compute(tr, op) -> None:
    tf32 = str(op.operands[0].type.element_type) == "f32"
    fn = functools.partial(W.compute, tf32=tf32)
    _collective(tr, op, fn, "(" + ", ".join(tr.val(v) for v in op.operands) + ")")


def _constant_matrix(tr, op) -> None:
    t = op.results[0].type
    info = scalar_info(t.element_type)
    dt = tr.glob(info.np_dtype, f"DT_{info.name}")
    tr.assign(op.results[0], f"_M.vbroadcast({tr.val(op.operands[0])}, {dt}, {tuple(t.shape)!r})")


def _elementwise(tr, op) -> None:
    src = scalar_info(op.operands[0].type.element_type)
    dst = scalar_info(op.results[0].type.element_type)
    if op.kind == "negates":
        def template(a, _op, s, _d):
            return wrap_expr(f"-{a[0]}", s), False
    else:
        template = TEMPLATES[ELEMENTWISE_ARITH[op.kind]]
    tr.assign(op.results[0], tr.vector_map(template, op, [tr.val(v) for v in op.operands], src, dst))


def _ldmatrix(tr, op) -> None:
    fn = functools.partial(W.ldmatrix, num_tiles=op.num_tiles, transpose=op.transpose,
                           frag_shape=op.results[0].type.shape)
    _collective(tr, op, fn, _indexed(tr, op.memref, op.indices))


def _mma_sync(tr, op) -> None:
    fn = functools.partial(W.mma_sync, k=op.mma_shape[2], tf32=op.tf32_enabled)
    _collective(tr, op, fn, "(" + ", ".join(tr.val(v) for v in op.operands) + ")")


def _async_state(tr, op) -> str | None:
    if tr.gpu is None or tr.gpu.async_copies is None:
        tr.unsupported(op, "outside a gpu.launch")
        return None
    return tr.gpu.async_copies


def _async_copy(tr, op) -> None:
    state = _async_state(tr, op)
    if state is None:
        return
    n = op.src_elements
    src_n = tr.val(n) if n is not None else "None"
    dst = f"{tr.mem(op.dst).name}, ({''.join(tr.val(v) + ', ' for v in op.dst_indices)})"
    src = f"{tr.mem(op.src).name}, ({''.join(tr.val(v) + ', ' for v in op.src_indices)})"
    tr.assign(op.results[0], f"{state}.copy({dst}, {src}, {op.dst_elements}, {src_n})")


def _async_group(tr, op) -> None:
    state = _async_state(tr, op)
    if state is not None:
        tr.assign(op.results[0], f"{state}.commit(({''.join(tr.val(v) + ', ' for v in op.operands)}))")


def _async_wait(tr, op) -> None:
    state = _async_state(tr, op)
    if state is not None:
        tr.emit(f"{state}.wait({tr.val(op.operands[0])}, {op.num_groups})")


def uses_async_copies(op: Operation) -> bool:
    """Whether the launch ``op`` issues asynchronous copies (its threads need an AsyncCopies)."""
    return any(inner.name == "nvgpu.device_async_copy" for inner in op.walk())


HANDLERS = {
    "gpu.subgroup_mma_load_matrix": _load_matrix,
    "gpu.subgroup_mma_store_matrix": _store_matrix,
    "gpu.subgroup_mma_compute": _compute,
    "gpu.subgroup_mma_constant_matrix": _constant_matrix,
    "gpu.subgroup_mma_elementwise": _elementwise,
    "nvgpu.ldmatrix": _ldmatrix,
    "nvgpu.mma.sync": _mma_sync,
    "nvgpu.device_async_copy": _async_copy,
    "nvgpu.device_async_create_group": _async_group,
    "nvgpu.device_async_wait": _async_wait,
}
