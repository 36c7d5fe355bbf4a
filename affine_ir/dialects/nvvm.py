"""The ``nvvm`` ops that Hopper programs use next to the ``nvgpu`` ops (syntax exactly as upstream prints it).

Ops::

    nvvm.wgmma.fence.aligned                    // order register/shared accesses before the next wgmma
    nvvm.wgmma.commit.group.sync.aligned        // the thread's pending wgmmas become one group
    nvvm.wgmma.wait.group.sync.aligned 0        // wait until at most 0 wgmma groups are pending
    nvvm.fence.proxy <async.shared>, space = <cta>   // order generic- and async-proxy accesses
    nvvm.fence.proxy <async>
    nvvm.fence.mbarrier.init                    // make mbarrier.init visible to the async proxy (TMA)
    nvvm.setmaxregister increase 240            // the warpgroup's register budget (24..256, multiple of 8)
    nvvm.cp.async.bulk.commit.group             // the thread's pending TMA stores become one bulk group
    nvvm.cp.async.bulk.wait_group 0 [read]      // wait until at most 0 bulk groups are pending
    nvvm.cluster.arrive [aligned]               // the thread arrives at its cluster's barrier
    nvvm.cluster.wait [aligned]                 // ... and waits until every thread of the cluster arrived

Every op here orders memory accesses or asynchronous work, so none declares memory effects (unknown:
never erased, nothing moves across them). The ``nvvm.wgmma.*`` ops are warpgroup-collective
(:class:`~affine_ir.traits.WarpgroupCollective`). What each one completes is documented with the
Hopper ``nvgpu`` ops in :mod:`.nvgpu_hopper`. The rest of the ``nvvm`` dialect is not modelled (its ops
stay unknown operations, or opaque passengers in the generic form with ``allow_unregistered``).
"""

from __future__ import annotations

from ..attributes import IntegerAttr, UnitAttr
from ..core import Operation, Value
from ..traits import Synchronization, WarpgroupCollective
from ..types import i32, i64

__all__ = ["ClusterArriveOp", "ClusterWaitOp", "CpAsyncBulkCommitGroupOp", "CpAsyncBulkWaitGroupOp",
           "FenceMbarrierInitOp", "FenceProxyOp", "NamedBarrierOp", "SetMaxRegisterOp", "WgmmaCommitGroupSyncOp",
           "WgmmaFenceAlignedOp", "WgmmaWaitGroupSyncOp"]

#: ``nvvm.fence.proxy`` kinds (upstream's ``ProxyKind`` without ``tensormap`` and ``generic``, which
#: this op refuses) and shared-memory spaces (``async.shared`` needs one; the others take none).
PROXY_KINDS = ("alias", "async", "async.global", "async.shared")
SHARED_SPACES = ("cta", "cluster")
REGISTER_ACTIONS = ("increase", "decrease")
MIN_REGISTERS, MAX_REGISTERS = 24, 256


class _NullaryOp(Operation):
    """``name {attrs}``: no operands, no results, unknown effects."""

    def __init__(self, location=None, attributes=None):
        super().__init__([], [], attributes, location=location)

    def print_(self, p) -> None:
        p.write(f"{self.name}{p.attr_dict(self)}")

    @classmethod
    def parse_(cls, p, loc):
        return cls(location=loc, attributes=p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if self.operands or self.results:
            raise self.error("takes no operands and gives no results")


class WgmmaFenceAlignedOp(_NullaryOp):
    """``nvvm.wgmma.fence.aligned``: accesses to wgmma registers and shared memory before it are ordered
    before the wgmmas after it (PTX ``wgmma.fence.sync.aligned``)."""

    name = "nvvm.wgmma.fence.aligned"
    traits = frozenset({WarpgroupCollective})


class WgmmaCommitGroupSyncOp(_NullaryOp):
    """``nvvm.wgmma.commit.group.sync.aligned``: the thread's uncommitted wgmmas become one group."""

    name = "nvvm.wgmma.commit.group.sync.aligned"
    traits = frozenset({WarpgroupCollective})


class FenceMbarrierInitOp(_NullaryOp):
    """``nvvm.fence.mbarrier.init``: prior ``mbarrier.init``s become visible to the async proxy (TMA)
    and to other threads (PTX ``fence.mbarrier_init.release.cluster``)."""

    name = "nvvm.fence.mbarrier.init"


class CpAsyncBulkCommitGroupOp(_NullaryOp):
    """``nvvm.cp.async.bulk.commit.group``: the thread's uncommitted bulk copies (TMA stores) become one
    bulk group."""

    name = "nvvm.cp.async.bulk.commit.group"


class _ClusterBarrierOp(Operation):
    """``name [aligned]``: a step of the thread-block cluster's barrier (PTX ``barrier.cluster.*``); ``aligned``:
    all threads of the warp execute it together. :class:`~affine_ir.traits.Synchronization`, effects unknown."""

    traits = frozenset({Synchronization})

    def __init__(self, aligned: bool = False, location=None, attributes=None):
        attrs = dict(attributes or {})
        if aligned:
            attrs["aligned"] = UnitAttr()
        super().__init__([], [], attrs, location=location)

    @property
    def aligned(self) -> bool:
        return "aligned" in self.attributes

    def print_(self, p) -> None:
        p.write(f"{self.name}{' aligned' if self.aligned else ''}{p.attr_dict(self, ('aligned',))}")

    @classmethod
    def parse_(cls, p, loc):
        aligned = p.accept("aligned")
        return p.add_attributes(cls(aligned, location=loc), p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if self.operands or self.results:
            raise self.error("takes no operands and gives no results")


class ClusterArriveOp(_ClusterBarrierOp):
    """``nvvm.cluster.arrive [aligned]``: the thread arrives at its cluster's barrier (release: its memory
    accesses before are visible to the threads of the cluster after their ``nvvm.cluster.wait``) and goes on.
    In a launch without clusters the block is the cluster."""

    name = "nvvm.cluster.arrive"


class ClusterWaitOp(_ClusterBarrierOp):
    """``nvvm.cluster.wait [aligned]``: the thread waits until every thread of every block of its cluster has
    arrived (``nvvm.cluster.arrive``) in the current phase; each thread alternates arrive and wait."""

    name = "nvvm.cluster.wait"


def _group_attr(p, width_type) -> IntegerAttr:
    loc = p.loc()
    n = p.parse_integer("the number of groups")
    if n < 0:
        raise p.error(f"expected a non-negative number of groups, found {n}", loc)
    return IntegerAttr(n, width_type)


class _GroupWaitOp(Operation):
    """A wait until at most ``group`` groups of the thread's asynchronous work are pending."""

    group_type = i64

    def __init__(self, group: int, location=None, attributes=None):
        attrs = dict(attributes or {})
        attrs["group"] = IntegerAttr(group, self.group_type)
        super().__init__([], [], attrs, location=location)

    @property
    def group(self) -> int:
        a = self.attributes.get("group")
        return a.value if isinstance(a, IntegerAttr) else -1

    def verify_(self) -> None:
        if self.operands or self.results:
            raise self.error("takes no operands and gives no results")
        if self.group < 0:
            raise self.error("needs a non-negative number of groups to leave pending")


class WgmmaWaitGroupSyncOp(_GroupWaitOp):
    """``nvvm.wgmma.wait.group.sync.aligned N``: wait until at most ``N`` of the thread's wgmma groups are
    pending (the retired groups have read their operands and written their accumulators)."""

    name = "nvvm.wgmma.wait.group.sync.aligned"
    traits = frozenset({WarpgroupCollective})

    def print_(self, p) -> None:
        p.write(f"{self.name}{p.attr_dict(self, ('group',))} {self.group}")

    @classmethod
    def parse_(cls, p, loc):
        attrs = p.parse_optional_attr_dict()  # upstream's format: attr-dict $group
        return p.add_attributes(cls(_group_attr(p, cls.group_type).value, location=loc), attrs)


class CpAsyncBulkWaitGroupOp(_GroupWaitOp):
    """``nvvm.cp.async.bulk.wait_group N [read]``: wait until at most ``N`` of the thread's bulk groups
    are pending (with ``read``: until their sources have been read)."""

    name = "nvvm.cp.async.bulk.wait_group"
    group_type = i32

    @property
    def read(self) -> bool:
        return "read" in self.attributes

    def print_(self, p) -> None:
        p.write(f"{self.name} {self.group}{' read' if self.read else ''}{p.attr_dict(self, ('group', 'read'))}")

    @classmethod
    def parse_(cls, p, loc):
        n = _group_attr(p, cls.group_type).value
        read = p.accept("read")
        attrs = p.parse_optional_attr_dict()
        if read:
            attrs["read"] = UnitAttr()
        return p.add_attributes(cls(n, location=loc), attrs)


class FenceProxyOp(Operation):
    """``nvvm.fence.proxy <async.shared>, space = <cta>``: order the accesses of the generic proxy (loads
    and stores) with those of another proxy (``kind``: ``async`` TMA/wgmma, ``async.shared``/``async.global``
    in one state space, ``alias``); ``space`` (``cta`` or ``cluster``) only with ``async.shared``, which
    needs it."""

    name = "nvvm.fence.proxy"

    def __init__(self, kind: str, space: str | None = None, location=None, attributes=None):
        attrs = dict(attributes or {})
        attrs["kind"] = kind
        if space is not None:
            attrs["space"] = space
        super().__init__([], [], attrs, location=location)

    @property
    def kind(self) -> str:
        return self.attributes.get("kind", "")

    @property
    def space(self) -> str | None:
        return self.attributes.get("space")

    def print_(self, p) -> None:
        space = f", space = <{self.space}>" if self.space is not None else ""
        p.write(f"nvvm.fence.proxy <{self.kind}>{space}{p.attr_dict(self, ('kind', 'space'))}")

    @classmethod
    def parse_(cls, p, loc):
        p.expect("<", "before the proxy kind")
        kind = p.parse_keyword(PROXY_KINDS)
        p.expect(">")
        space = None
        if p.accept(","):
            p.expect("space")
            p.expect("=")
            p.expect("<")
            space = p.parse_keyword(SHARED_SPACES)
            p.expect(">")
        return p.add_attributes(cls(kind, space, location=loc), p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if self.operands or self.results:
            raise self.error("takes no operands and gives no results")
        if self.kind not in PROXY_KINDS:
            raise self.error(f"kind must be one of {', '.join(PROXY_KINDS)}, got {self.kind!r}")
        if self.kind == "async.shared" and self.space is None:
            raise self.error("an async.shared fence needs 'space = <cta>' or 'space = <cluster>'")
        if self.kind != "async.shared" and self.space is not None:
            raise self.error(f"only an async.shared fence takes a space, not {self.kind}")
        if self.space is not None and self.space not in SHARED_SPACES:
            raise self.error(f"space must be cta or cluster, got {self.space!r}")


class SetMaxRegisterOp(Operation):
    """``nvvm.setmaxregister increase 240`` / ``decrease 40``: raise or lower the register budget of each
    thread of the warpgroup (PTX ``setmaxnreg``; ``reg_count`` a multiple of 8 from 24 to 256).
    Warpgroup-collective: all four warps of the warpgroup execute it."""

    name = "nvvm.setmaxregister"
    traits = frozenset({WarpgroupCollective})  # PTX: every warp of the warpgroup runs it (.sync.aligned)

    def __init__(self, action: str, reg_count: int, location=None, attributes=None):
        attrs = dict(attributes or {})
        attrs.update({"action": action, "regCount": IntegerAttr(reg_count, i32)})
        super().__init__([], [], attrs, location=location)

    @property
    def action(self) -> str:
        return self.attributes.get("action", "")

    @property
    def reg_count(self) -> int:
        a = self.attributes.get("regCount")
        return a.value if isinstance(a, IntegerAttr) else 0

    def print_(self, p) -> None:
        p.write(f"nvvm.setmaxregister {self.action} {self.reg_count}{p.attr_dict(self, ('action', 'regCount'))}")

    @classmethod
    def parse_(cls, p, loc):
        action = p.parse_keyword(REGISTER_ACTIONS)
        n = p.parse_integer("the register count")
        return p.add_attributes(cls(action, n, location=loc), p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if self.operands or self.results:
            raise self.error("takes no operands and gives no results")
        if self.action not in REGISTER_ACTIONS:
            raise self.error(f"action must be increase or decrease, got {self.action!r}")
        n = self.reg_count
        if n % 8 or not MIN_REGISTERS <= n <= MAX_REGISTERS:
            raise self.error(f"the register count must be a multiple of 8 from {MIN_REGISTERS} to {MAX_REGISTERS}, "
                             f"got {n}")


class NamedBarrierOp(Operation):
    """``nvvm.barrier id = %id number_of_threads = %n`` (i32 operands): the threads wait until ``n`` threads
    (a multiple of 32) have arrived at barrier ``id`` (PTX ``bar.sync id, n``) -- a barrier of some warps of
    the block, such as the consumer warpgroups of a warp-specialized kernel; ``nvvm.barrier`` alone is the
    whole block's (``__syncthreads``). :class:`~affine_ir.traits.Synchronization`, effects unknown."""

    name = "nvvm.barrier"
    traits = frozenset({Synchronization})

    def __init__(self, barrier_id: Value | None = None, number_of_threads: Value | None = None, location=None,
                 attributes=None):
        operands = [v for v in (barrier_id, number_of_threads) if v is not None]
        super().__init__(operands, [], dict(attributes or {}), location=location)
        self._has_id = barrier_id is not None

    @property
    def barrier_id(self) -> Value | None:
        return self.operands[0] if self._has_id and self.operands else None

    @property
    def number_of_threads(self) -> Value | None:
        n = len(self.operands)
        return self.operands[-1] if n == 2 or (n == 1 and not self._has_id) else None

    def print_(self, p) -> None:
        parts = []
        if self.barrier_id is not None:
            parts.append(f" id = {p.value(self.barrier_id)}")
        if self.number_of_threads is not None:
            parts.append(f" number_of_threads = {p.value(self.number_of_threads)}")
        p.write(f"nvvm.barrier{''.join(parts)}{p.attr_dict(self)}")

    @classmethod
    def parse_(cls, p, loc):
        values = {}
        for key in ("id", "number_of_threads"):
            if p.accept(key):
                p.expect("=")
                values[key] = p.parse_operand(i32)
        return cls(values.get("id"), values.get("number_of_threads"), location=loc,
                   attributes=p.parse_optional_attr_dict())

    def verify_(self) -> None:
        if self.results or any(v.type != i32 for v in self.operands):
            raise self.error("takes i32 operands (id, number_of_threads) and gives no results")
        if self.number_of_threads is not None and self.barrier_id is None:
            raise self.error("number_of_threads needs an id")
