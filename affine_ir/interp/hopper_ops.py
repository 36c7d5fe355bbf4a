"""Translation of Hopper's ops (``nvgpu.mbarrier.*``, ``nvgpu.tma.*``, ``nvgpu.warpgroup.*``, the
``nvvm`` subset) and of ``memref.view``/``memref.cast``; their run-time semantics are in :mod:`.hopper`.

In a launch body, each block gets its mbarrier groups (one per ``nvgpu.mbarrier.create``, like a
workgroup buffer) and one :class:`~.hopper.BlockAsync` for its asynchronous work. Warpgroup ops
(``warpgroup.mma``, ``warpgroup.mma.store``, ``nvvm.wgmma.wait.group.sync.aligned``) are collective
over the 128 threads of a warpgroup; ``mbarrier.try_wait.parity`` blocks its thread (the block's
scheduler, :func:`.gpu.run_block`, resumes it once the phase completed).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..core import Operation
from ..types import MemRefType
from . import hopper as H
from .semantics import scalar_info
from .warp import Collective

#: Ops that make the launch body run as generators (see :mod:`.gpu`).
WARPGROUP_COLLECTIVES = frozenset({"nvgpu.warpgroup.mma", "nvgpu.warpgroup.mma.store",
                                   "nvvm.wgmma.wait.group.sync.aligned"})
BLOCKING = frozenset({"nvgpu.mbarrier.try_wait.parity", "nvvm.barrier", "nvvm.cluster.wait"})
#: Ops that reach the other blocks of a thread-block cluster (their blocks then run together, see :mod:`.gpu`).
CLUSTER_OPS = frozenset({"nvgpu.mbarrier.arrive.remote", "nvvm.cluster.arrive", "nvvm.cluster.wait"})


def uses_cluster(op: Operation) -> bool:
    """Whether ``op`` reaches other blocks of its cluster (or waits for them)."""
    return op.name in CLUSTER_OPS or (op.name == "nvgpu.tma.async.load" and op.multicast_mask is not None)
#: Ops that need the block's asynchronous state.
ASYNC_OPS = frozenset({"nvgpu.tma.async.load", "nvgpu.tma.async.store", "nvgpu.mbarrier.try_wait.parity",
                       "nvgpu.warpgroup.mma", "nvvm.wgmma.wait.group.sync.aligned", "nvvm.cp.async.bulk.wait_group"})


@dataclass(frozen=True)
class Blocking:
    """A blocking wait of a launch body: ``ready(payload)`` says whether the thread may go on."""

    desc: str
    ready: object

    def __str__(self) -> str:
        return self.desc


def _where(op: Operation) -> str:
    return f"'{op.name}'" + (f" at {op.location}" if op.location else "")


def _in_launch(tr, op: Operation, need_async: bool = False) -> bool:
    if tr.gpu is None or (need_async and tr.gpu.block_async is None):
        tr.unsupported(op, "outside a gpu.launch")
        return False
    return True


def thread_linear(tr) -> str:
    """The expression of the thread's linear id in its block (x fastest)."""
    (_, _, _), (tx, ty, tz), _, (sx, sy, _) = tr.gpu.names
    return f"({tx} + {sx} * ({ty} + {sy} * {tz}))"


def cluster_rank(tr) -> str:
    """The expression of the block's rank in its cluster (its linear id there, x fastest)."""
    (bx, by, bz), _, _, _ = tr.gpu.names
    cx, cy, cz = tr.gpu.cluster_size
    return f"({bx} % {cx} + {cx} * ({by} % {cy} + {cy} * ({bz} % {cz})))"


def _tuple(tr, values) -> str:
    """The Python tuple of the values' expressions."""
    return "(" + "".join(tr.val(v) + ", " for v in values) + ")"


def _pred(tr, v) -> str:
    return "True" if v is None else f"bool({tr.val(v)})"


# -- mbarriers -------------------------------------------------------------------------------


def _mbarrier_create(tr, op) -> None:
    name = tr.gpu.mbarriers.get(id(op)) if tr.gpu is not None else None
    if name is None:
        tr.unsupported(op, "outside a gpu.launch (mbarriers live in a block's shared memory)")
        return
    tr.exprs[op.results[0]] = name


def _mbarrier_init(tr, op) -> None:
    tr.emit(f"{tr.val(op.barriers)}.init({tr.val(op.mbar_id)}, {tr.val(op.count)}, {_pred(tr, op.predicate)})")


def _mbarrier_arrive(tr, op) -> None:
    tr.emit(f"{tr.val(op.barriers)}.arrive({tr.val(op.mbar_id)})")
    if op.results:
        tr.assign(op.results[0], "None")


def _mbarrier_arrive_remote(tr, op) -> None:
    if not _in_launch(tr, op, True):
        return
    tr.emit(f"{tr.gpu.cluster}.remote_arrive({cluster_rank(tr)}, {thread_linear(tr)}, {tr.val(op.barriers)}, "
            f"{tr.val(op.mbar_id)}, {tr.val(op.cta)})")


def _cluster_arrive(tr, op) -> None:
    if _in_launch(tr, op, True):
        tr.emit(f"{tr.gpu.cluster}.arrive({cluster_rank(tr)}, {thread_linear(tr)})")


def _cluster_wait(tr, op) -> None:
    if not _in_launch(tr, op, True):
        return
    k = tr.gpu.barriers[id(op)]
    tr.gpu.collectives[k] = Blocking(_where(op), H.cluster_wait_ready)
    tr.emit(f"yield ({k}, {tr.gpu.cluster}.wait({cluster_rank(tr)}, {thread_linear(tr)}))")


def _mbarrier_expect_tx(tr, op) -> None:
    tr.emit(f"{tr.val(op.barriers)}.expect_tx({tr.val(op.mbar_id)}, {tr.val(op.txcount)}, "
            f"{_pred(tr, op.predicate)})")


def _try_wait(tr, op) -> None:
    if not _in_launch(tr, op, True):
        return
    k = tr.gpu.barriers[id(op)]
    tr.gpu.collectives[k] = Blocking(_where(op), _wait_ready)
    tr.emit(f"yield ({k}, ({tr.gpu.block_async}, {tr.val(op.barriers)}, {tr.val(op.mbar_id)}, "
            f"bool({tr.val(op.parity)})))")


def _wait_ready(payload) -> bool:
    state, group, k, parity = payload
    return state.wait_ready(group, k, parity)


@dataclass(frozen=True)
class NamedBarrier:
    """``nvvm.barrier id, number_of_threads``: the threads wait until that many are at barrier ``id``."""

    desc: str
    named: bool = True

    def __str__(self) -> str:
        return self.desc


def _named_barrier(tr, op) -> None:
    if not _in_launch(tr, op):
        return
    k = tr.gpu.barriers[id(op)]
    if op.barrier_id is None or op.number_of_threads is None:
        tr.gpu.collectives[k] = "'nvvm.barrier'" + (f" at {op.location}" if op.location else "")
        tr.emit(f"yield ({k}, None)")
        return
    tr.gpu.collectives[k] = NamedBarrier(_where(op))
    tr.emit(f"yield ({k}, ({tr.val(op.barrier_id)}, {tr.val(op.number_of_threads)}))")


# -- TMA ---------------------------------------------------------------------------------------


def _create_descriptor(tr, op) -> None:
    t = op.results[0].type
    tr.assign(op.results[0], f"_H.create_tensor_map({tr.val(op.tensor)}, {_tuple(tr, op.box)}, {t.swizzle!r}, "
                             f"{t.oob!r})")


def _tma_load(tr, op) -> None:
    if not _in_launch(tr, op, True):
        return
    if op.multicast_mask is not None:
        info = scalar_info(op.dst.type.element_type)
        tr.emit(f"{tr.gpu.cluster}.tma_load({cluster_rank(tr)}, {thread_linear(tr)}, {tr.val(op.descriptor)}, "
                f"{_tuple(tr, op.coordinates)}, {tr.val(op.barriers)}, {tr.val(op.mbar_id)}, {tr.mem(op.dst).name}, "
                f"{tr.glob(info, f'I_{info.name}')}, {tr.val(op.multicast_mask)}, {_pred(tr, op.predicate)})")
        return
    tr.emit(f"{tr.gpu.block_async}.tma_load({tr.val(op.descriptor)}, {_tuple(tr, op.coordinates)}, "
            f"{tr.val(op.barriers)}, {tr.val(op.mbar_id)}, {tr.mem(op.dst).name}, {_pred(tr, op.predicate)})")


def _tma_store(tr, op) -> None:
    if not _in_launch(tr, op, True):
        return
    tr.emit(f"{tr.gpu.block_async}.tma_store({thread_linear(tr)}, {tr.mem(op.src).name}, "
            f"{tr.val(op.descriptor)}, {_tuple(tr, op.coordinates)}, {_pred(tr, op.predicate)})")


def _bulk_wait(tr, op) -> None:
    if _in_launch(tr, op, True):
        tr.emit(f"{tr.gpu.block_async}.bulk_wait({thread_linear(tr)})")


# -- warpgroup MMA -------------------------------------------------------------------------------


def _collective(tr, op, fn, payload: str) -> None:
    if not _in_launch(tr, op, True):
        return
    k = tr.gpu.barriers[id(op)]
    tr.gpu.collectives[k] = Collective(_where(op), fn, H.WARPGROUP)
    if op.results:
        tr.emit(f"{tr.define(op.results[0])} = yield ({k}, {payload})")
    else:
        tr.emit(f"yield ({k}, {payload})")


def _generate_descriptor(tr, op) -> None:
    tr.assign(op.results[0], f"_H.generate_descriptor({tr.mem(op.tensor).name}, {tr.val(op.tensor_map)})")


def _init_accumulator(tr, op) -> None:
    shape = tuple(op.results[0].type.fragmented.shape)
    tr.assign(op.results[0], f"_H.init_accumulator({shape!r})")


def _wgmma(tr, op) -> None:
    if not _in_launch(tr, op, True):
        return
    fn = functools.partial(_run_wgmma, wait_group=op.wait_group, transpose_a=op.transpose_a,
                           transpose_b=op.transpose_b)
    payload = (f"({tr.gpu.block_async}, {thread_linear(tr)}, {tr.val(op.descriptor_a)}, "
               f"{tr.val(op.descriptor_b)}, {tr.val(op.matrix_c)})")
    _collective(tr, op, fn, payload)


def _run_wgmma(lanes: list, wait_group: int, transpose_a: bool, transpose_b: bool) -> list:
    state = lanes[0][0]
    return state.wgmma([x[1:] for x in lanes], wait_group, transpose_a, transpose_b)


def _mma_store(tr, op) -> None:
    _collective(tr, op, H.mma_store, f"({tr.val(op.matrix_d)}, {tr.mem(op.dst).name})")


def _wgmma_wait(tr, op) -> None:
    fn = functools.partial(_run_wgmma_wait, keep=op.group)
    _collective(tr, op, fn, f"({tr.gpu.block_async if tr.gpu else None}, {thread_linear(tr) if tr.gpu else 0})")


def _run_wgmma_wait(lanes: list, keep: int) -> list:
    return lanes[0][0].wgmma_wait([x[1] for x in lanes], keep)


def _no_op(tr, op) -> None:
    """Fences, ``setmaxregister``, wgmma fence/commit: ordering the interpreter has by construction
    (each warpgroup.mma commits its own group)."""


# -- memref.view / memref.cast -------------------------------------------------------------------------


def _view(tr, op) -> None:
    t: MemRefType = op.results[0].type
    dyn = iter(op.sizes)
    sizes = [str(d) if d is not None else tr.val(next(dyn)) for d in t.shape]
    info = scalar_info(t.element_type)
    tr.assign(op.results[0], f"_H.view({tr.mem(op.source).name}, {tr.val(op.byte_shift)}, "
                             f"({''.join(s + ', ' for s in sizes)}), {tr.glob(info, f'I_{info.name}')})")
    tr.bind_value(op.results[0])


def _cast(tr, op) -> None:
    tr.exprs[op.results[0]] = tr.mem(op.operands[0]).name if isinstance(op.operands[0].type, MemRefType) \
        else tr.val(op.operands[0])
    if isinstance(op.results[0].type, MemRefType):
        tr.bind_value(op.results[0])


HANDLERS = {
    "nvgpu.mbarrier.create": _mbarrier_create,
    "nvgpu.mbarrier.init": _mbarrier_init,
    "nvgpu.mbarrier.arrive": _mbarrier_arrive,
    "nvgpu.mbarrier.arrive.expect_tx": _mbarrier_expect_tx,
    "nvgpu.mbarrier.arrive.remote": _mbarrier_arrive_remote,
    "nvvm.cluster.arrive": _cluster_arrive,
    "nvvm.cluster.wait": _cluster_wait,
    "nvgpu.mbarrier.try_wait.parity": _try_wait,
    "nvgpu.tma.create.descriptor": _create_descriptor,
    "nvgpu.tma.prefetch.descriptor": _no_op,
    "nvgpu.tma.async.load": _tma_load,
    "nvgpu.tma.async.store": _tma_store,
    "nvgpu.warpgroup.generate.descriptor": _generate_descriptor,
    "nvgpu.warpgroup.mma.init.accumulator": _init_accumulator,
    "nvgpu.warpgroup.mma": _wgmma,
    "nvgpu.warpgroup.mma.store": _mma_store,
    "nvvm.wgmma.fence.aligned": _no_op,
    "nvvm.wgmma.commit.group.sync.aligned": _no_op,
    "nvvm.wgmma.wait.group.sync.aligned": _wgmma_wait,
    "nvvm.barrier": _named_barrier,
    "nvvm.fence.proxy": _no_op,
    "nvvm.fence.mbarrier.init": _no_op,
    "nvvm.setmaxregister": _no_op,
    "nvvm.cp.async.bulk.commit.group": _no_op,
    "nvvm.cp.async.bulk.wait_group": _bulk_wait,
    "memref.view": _view,
    "memref.cast": _cast,
}
