"""The dependence graph of a function's top-level ops, for loop fusion.

Nodes are the top-level ops of a function that touch memory (loop nests, lone accesses,
``affine.if`` ops, ops with unknown effects on memrefs), in program order; edges go from an
earlier node to a later one that must stay after it: a memref dependence (RAW, WAR, WAW,
and RAR on request for sibling fusion) decided exactly with isl, or an SSA use. It offers
what MLIR's ``MemRefDependenceGraph`` offers ``affine-loop-fusion`` (load/store lists per
node, store counts per memref, in/out edge counts, paths), with exact memref edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from affine_ir import FuncOp, Operation, Value
from affine_ir.interfaces import LoopLikeOpInterface
from affine_ir.traits import IsTerminator, Pure, allocating_op
from affine_ir.types import MemRefType

from .dependences import Dependence, DependenceAnalysis, dependence_kind, value_name
from .isl_bridge import Statement

__all__ = ["DependenceGraph", "Edge", "Node"]


@dataclass(eq=False)
class Node:
    """A top-level op of a function that touches memory: a loop nest, a lone access, an
    ``affine.if``, or an op with unknown effects on memrefs (``func.call``, ``memref.dealloc``,
    ``memref.alloc``...). ``loads``/``stores`` list its accesses in walk order (vector and
    ``memref`` accesses included); ``opaque`` the ops whose effect on a memref is unknown."""

    id: int
    op: Operation
    loads: list[Operation] = field(default_factory=list)
    stores: list[Operation] = field(default_factory=list)
    opaque: list[Operation] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list, repr=False)

    def loads_of(self, memref: Value) -> list[Operation]:
        return [s.op for s in self.statements if s.memref is memref and not s.is_write]

    def stores_of(self, memref: Value) -> list[Operation]:
        return [s.op for s in self.statements if s.memref is memref and s.is_write and not s.opaque]

    def load_op_count(self, memref: Value) -> int:
        return len(self.loads_of(memref))

    def store_op_count(self, memref: Value) -> int:
        return len(self.stores_of(memref))

    @property
    def memrefs(self) -> list[Value]:
        """The memrefs it accesses, in first-access order."""
        out: list[Value] = []
        for s in self.statements:
            if all(m is not s.memref for m in out):
                out.append(s.memref)
        return out

    def load_and_store_memrefs(self) -> list[Value]:
        """The memrefs it both loads and stores."""
        return [m for m in self.memrefs if self.loads_of(m) and self.stores_of(m)]

    @property
    def is_loop_nest(self) -> bool:
        """Whether the node is a loop (an op of ``LoopLikeOpInterface``)."""
        return isinstance(self.op, LoopLikeOpInterface)

    @property
    def is_exact(self) -> bool:
        """Whether every access in it is modelled exactly (affine, no opaque op)."""
        return all(s.is_affine and not s.in_unknown_region for s in self.statements)


@dataclass(frozen=True)
class Edge:
    """``src`` must run before ``dst`` (node ids): a dependence of ``kind`` (RAW, WAR, WAW, RAR)
    on memref ``value``, or ``"SSA"``: ``dst`` uses ``value`` defined by ``src``. ``exact`` is
    False for a memref edge assumed because an access is not modelled exactly."""

    src: int
    dst: int
    value: Value
    kind: str
    exact: bool = True


class DependenceGraph:
    """Nodes: the top-level ops of ``func`` that touch memory (see :class:`Node`), in program
    order. Edges: from an earlier node to a later one, one per (memref, kind) when some
    access of the first and some access of the second touch the same element (exact, isl),
    at least one writing (RAR only with ``include_rar``); and SSA edges from a node to the
    nodes using its results (through pure top-level ops). As MLIR's ``MemRefDependenceGraph``
    for ``affine-loop-fusion``, with exact memref edges."""

    def __init__(self, func: FuncOp, include_rar: bool = False):
        self.func = func
        self.include_rar = include_rar
        self.analysis = DependenceAnalysis(func)
        self._body = func.body if func.regions and func.regions[0].blocks else None  # None: a declaration
        self.nodes: list[Node] = []
        self._node_of_op: dict[Operation, Node] = {}
        self.edges: list[Edge] = []
        self._edge_set: set[Edge] = set()
        self._out: dict[int, list[Edge]] = {}
        self._in: dict[int, list[Edge]] = {}
        self._build_nodes()
        self._build_ssa_edges()
        self._build_memref_edges()

    # -- construction ----------------------------------------------------------------------
    def _build_nodes(self) -> None:
        by_position: dict[int, list[Statement]] = {}
        for s in self.analysis.statements:
            by_position.setdefault(s.path[0], []).append(s)
        for k, op in enumerate(self._body.ops if self._body is not None else []):
            stmts = by_position.get(k, [])
            if op.has_trait(IsTerminator) or (not stmts and op.has_trait(Pure)):
                continue
            node = Node(len(self.nodes), op, statements=stmts)
            for s in stmts:
                target = node.opaque if s.opaque else node.stores if s.is_write else node.loads
                if all(o is not s.op for o in target):
                    target.append(s.op)
            self.nodes.append(node)
            self._node_of_op[op] = node

    def _add_edge(self, edge: Edge) -> None:
        if edge not in self._edge_set:
            self._edge_set.add(edge)
            self.edges.append(edge)
            self._out.setdefault(edge.src, []).append(edge)
            self._in.setdefault(edge.dst, []).append(edge)

    def _build_ssa_edges(self) -> None:
        body = self._body
        for node in self.nodes:
            for r in node.op.results:
                seen: set[Operation] = set()
                work = [r]
                while work:
                    v = work.pop()
                    for user in v.users():
                        top = _top_level(user, body)
                        if top is None or top in seen:
                            continue
                        seen.add(top)
                        other = self._node_of_op.get(top)
                        if other is None:
                            work.extend(top.results)
                        elif other is not node:
                            self._add_edge(Edge(node.id, other.id, r, "SSA"))

    def _build_memref_edges(self) -> None:
        users: dict[Value, list[Node]] = {}
        for node in self.nodes:
            for m in node.memrefs:
                users.setdefault(m, []).append(node)
        for node_list in users.values():
            for i, a in enumerate(node_list):
                for b in node_list[i + 1 :]:
                    for edge in self._memref_edges(a, b):
                        self._add_edge(edge)

    def _memref_edges(self, a: Node, b: Node) -> list[Edge]:
        found: dict[tuple[Value, str], Edge] = {}
        for s in a.statements:
            for t in b.statements:
                if s.memref is not t.memref:
                    continue
                kind = dependence_kind(s, t)
                if (kind == "RAR" and not self.include_rar) or (s.memref, kind) in found:
                    continue
                exact = s.is_affine and t.is_affine and not (s.in_unknown_region or t.in_unknown_region)
                if exact and s.access.apply_range(t.access.reverse()).is_empty():
                    continue
                found[(s.memref, kind)] = Edge(a.id, b.id, s.memref, kind, exact)
        return list(found.values())

    # -- queries ---------------------------------------------------------------------------
    def node(self, key: Node | Operation | int) -> Node:
        """The node of an op (the top-level op or any op inside it), or with an id."""
        if isinstance(key, Node):
            return key
        if isinstance(key, int):
            return self.nodes[key]
        top = _top_level(key, self._body) if self._body is not None else None
        node = self._node_of_op.get(top) if top is not None else None
        if node is None:
            raise KeyError(f"'{key.name}' is not in a node of the dependence graph")
        return node

    def out_edges(self, node) -> list[Edge]:
        return list(self._out.get(self.node(node).id, []))

    def in_edges(self, node) -> list[Edge]:
        return list(self._in.get(self.node(node).id, []))

    def successors(self, node) -> list[Node]:
        """Nodes with an edge from ``node``, in program order."""
        return [self.nodes[i] for i in sorted({e.dst for e in self.out_edges(node)})]

    def predecessors(self, node) -> list[Node]:
        """Nodes with an edge to ``node``, in program order."""
        return [self.nodes[i] for i in sorted({e.src for e in self.in_edges(node)})]

    def edges_between(self, a, b) -> list[Edge]:
        """The edges from ``a`` to ``b``."""
        b = self.node(b)
        return [e for e in self.out_edges(a) if e.dst == b.id]

    def has_edge(self, a, b, value: Value | None = None) -> bool:
        return any(value is None or e.value is value for e in self.edges_between(a, b))

    def nodes_accessing(self, memref: Value) -> list[Node]:
        """Nodes with an access to ``memref`` (opaque users included), in program order."""
        return [n for n in self.nodes if any(m is memref for m in n.memrefs)]

    def has_path(self, a, b) -> bool:
        """Whether a chain of edges leads from ``a`` to ``b`` (``a`` itself counts)."""
        a, b = self.node(a), self.node(b)
        seen, work = {a.id}, [a.id]
        while work:
            n = work.pop()
            if n == b.id:
                return True
            for e in self._out.get(n, []):
                if e.dst not in seen and e.dst <= b.id:  # edges only go forward
                    seen.add(e.dst)
                    work.append(e.dst)
        return False

    def out_edge_count(self, node, memref: Value | None = None) -> int:
        return sum(memref is None or e.value is memref for e in self.out_edges(node))

    def incoming_memref_accesses(self, node, memref: Value) -> int:
        """In-edges of ``node`` on ``memref`` from nodes that store to it (MLIR's
        ``getIncomingMemRefAccesses``)."""
        return sum(e.value is memref and self.nodes[e.src].store_op_count(memref) > 0 for e in self.in_edges(node))

    def memref_edge_count(self, memref: Value) -> int:
        return sum(e.value is memref and e.kind != "SSA" for e in self.edges)

    def store_count(self, memref: Value) -> int:
        """Store ops to ``memref`` in the whole function."""
        return sum(n.store_op_count(memref) for n in self.nodes)

    def writes_to_live_in_or_escaping_memrefs(self, node) -> bool:
        """Whether ``node`` stores to a memref that is a function argument, is not a local
        ``memref.alloc``/``alloca``, or is used by an op with unknown effects or returned."""
        node = self.node(node)
        for m in node.memrefs:
            if not node.stores_of(m) and not node.opaque:
                continue
            if allocating_op(m) is None or any(_lets_escape(u, m) for u in m.users()):
                return True
        return False

    def dependences_between(self, a, b) -> list[Dependence]:
        """The full dependences from accesses of ``a`` to accesses of ``b``."""
        a, b = self.node(a), self.node(b)
        out = []
        for s in a.statements:
            for t in b.statements:
                if s.memref is t.memref and (s.is_write or t.is_write or self.include_rar):
                    dep = self.analysis.pair(s, t)
                    if dep is not None:
                        out.append(dep)
        return out

    def __str__(self) -> str:
        lines = []
        for n in self.nodes:
            where = f" at {n.op.location}" if n.op.location else ""
            lines.append(f"node {n.id}: {n.op.name}{where} ({len(n.loads)} loads, {len(n.stores)} stores)")
            for e in self.out_edges(n):
                note = "" if e.exact else " (may)"
                lines.append(f"  -> {e.dst} {e.kind} {value_name(e.value)}{note}")
        return "\n".join(lines)


def _top_level(op: Operation, body) -> Operation | None:
    while op is not None and op.parent is not body:
        op = op.parent_op
    return op


def _lets_escape(user: Operation, m: Value) -> bool:
    """Whether ``user`` of memref ``m`` may let it be seen outside its accesses: a terminator
    (it is returned), an op whose effects are unknown or fall on other memory, or one that
    returns a memref (it may be a view of ``m``). Loads, stores, ``memref.dim`` (no effect) and
    ``memref.dealloc`` (FREE of ``m``) do not."""
    if user.has_trait(IsTerminator) or any(isinstance(r.type, MemRefType) for r in user.results):
        return True
    effects = user.memory_effects()
    return effects is None or any(e.value is not m for e in effects)
