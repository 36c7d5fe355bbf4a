"""The op graph: SSA values with uses, operations, blocks and regions.

Operations form a mutable tree (an op owns regions, a region owns blocks, a block owns
ops). Values record their uses so ``replace_all_uses_with`` and dead-code checks are
cheap. Op kinds are subclasses of :class:`Operation` registered by their MLIR name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import ClassVar

from .errors import Location, VerifyError
from .traits import (
    AffineScope,
    AlwaysSpeculatable,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    NoMemoryEffect,
    OpTrait,
    Pure,
    RecursiveMemoryEffects,
    TraitFlag,
    collect_traits,
    nested_memory_effects,
    trait_closure,
)
from .types import Type

OP_REGISTRY: dict[str, type[Operation]] = {}


class Use:
    """One use of a value: operand ``index`` of ``op``."""

    __slots__ = ("op", "index")

    def __init__(self, op: Operation, index: int):
        self.op = op
        self.index = index

    def __repr__(self) -> str:
        return f"Use({self.op.name}, {self.index})"


class Value:
    """An SSA value: a type, a name hint for printing, and its uses."""

    __slots__ = ("type", "name_hint", "uses", "__weakref__")

    def __init__(self, type: Type, name_hint: str | None = None):
        self.type = type
        self.name_hint = name_hint
        self.uses: list[Use] = []

    @property
    def owner(self) -> Operation | Block:
        raise NotImplementedError

    @property
    def has_uses(self) -> bool:
        return bool(self.uses)

    def users(self) -> list[Operation]:
        """The ops using this value, each once, in use order."""
        seen: dict[int, Operation] = {}
        for u in self.uses:
            seen.setdefault(id(u.op), u.op)
        return list(seen.values())

    def replace_all_uses_with(self, new: Value) -> None:
        """Make every user of ``self`` use ``new`` instead (O(number of uses)); the uses move, in
        order, to the end of ``new.uses``."""
        if new is self:
            return
        uses, self.uses = self.uses, []
        for use in uses:
            use.op._operands[use.index] = new
        new.uses.extend(uses)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} %{self.name_hint or '?'} : {self.type}>"


class OpResult(Value):
    """Result ``index`` of ``op``."""

    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: Operation, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.op = op
        self.index = index

    @property
    def owner(self) -> Operation:
        return self.op


class BlockArgument(Value):
    """Argument ``index`` of ``block`` (a loop IV, an iter_arg, a function argument)."""

    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: Block, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.block = block
        self.index = index

    @property
    def owner(self) -> Block:
        return self.block


class Operation:
    """An operation: operands, results, attributes, regions, a parent block, a location.

    Subclasses set ``name`` (registering the class under it), and may define
    ``verify_`` (raise :class:`VerifyError`), ``print_`` and ``parse_`` for their custom
    syntax (see ``printer`` and ``parser``).
    """

    name: ClassVar[str] = ""
    # The op's traits (see affine_ir.traits): its own declaration united with its bases' traits.
    traits: ClassVar[frozenset[type[OpTrait]]] = frozenset()
    # The traits and every trait they imply; what has_trait looks up.
    trait_closure: ClassVar[frozenset[type[OpTrait]]] = frozenset()
    # Read-only views of traits, kept for the code that asks them: regions cannot see values
    # defined outside (func.func, builtin.module); terminates its block; Pure; AffineScope.
    isolated_from_above = TraitFlag(IsolatedFromAbove)
    is_terminator = TraitFlag(IsTerminator)
    is_pure = TraitFlag(Pure)
    affine_scope = TraitFlag(AffineScope)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.traits = collect_traits(cls)
        cls.trait_closure = trait_closure(cls.traits)
        if cls.__dict__.get("name"):
            OP_REGISTRY[cls.name] = cls

    @classmethod
    def has_trait(cls, trait: type[OpTrait]) -> bool:
        """Whether the op (or op class) declares ``trait`` or a trait implying it (``Pure``
        implies ``NoMemoryEffect``); works on the class and on an instance."""
        return trait in cls.trait_closure

    def __init__(
        self,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict | None = None,
        regions: Sequence[Region] | int = 0,
        location: Location | None = None,
        result_names: Sequence[str | None] | None = None,
    ):
        self._operands: list[Value] = []
        self._operand_uses: list[Use | None] = []  # the Use of each operand (None once dropped)
        self.results = [
            OpResult(t, self, i, result_names[i] if result_names else None)
            for i, t in enumerate(result_types)
        ]
        self.attributes: dict = dict(attributes or {})
        if isinstance(regions, int):
            regions = [Region([Block()]) for _ in range(regions)]
        self.regions: list[Region] = []
        for r in regions:
            self.add_region(r)
        self.parent: Block | None = None
        self._prev: Operation | None = None  # neighbours in the parent block (see Block)
        self._next: Operation | None = None
        self._order = 0
        self.location = location
        for v in operands:
            self._append_operand(v)

    # -- operands ---------------------------------------------------------------------
    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    def _append_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"{self.name}: operand {v!r} is not a Value")
        use = Use(self, len(self._operands))
        v.uses.append(use)
        self._operand_uses.append(use)
        self._operands.append(v)

    def _drop_use(self, i: int) -> None:
        """Remove operand ``i``'s entry from its value's uses (once; the operand stays)."""
        use = self._operand_uses[i]
        if use is not None:
            self._operands[i].uses.remove(use)  # by identity, scanned in C
            self._operand_uses[i] = None

    def set_operand(self, i: int, v: Value) -> None:
        """Replace operand ``i`` by ``v``, keeping use lists right."""
        if not isinstance(v, Value):
            raise TypeError(f"{self.name}: operand {v!r} is not a Value")
        self._drop_use(i)
        self._operands[i] = v
        use = self._operand_uses[i] = Use(self, i)
        v.uses.append(use)

    def set_operands(self, values: Iterable[Value]) -> None:
        """Replace all operands."""
        values = list(values)
        self.drop_operand_uses()
        self._operands = []
        self._operand_uses = []
        for v in values:
            self._append_operand(v)

    def drop_operand_uses(self) -> None:
        for i in range(len(self._operands)):
            self._drop_use(i)

    # -- results, regions, parents ---------------------------------------------------
    @property
    def result(self) -> OpResult:
        """The single result; ValueError when the op has not exactly one."""
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    def add_region(self, region: Region) -> Region:
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def body(self) -> Block:
        """The single block of the first region (loops, ifs, functions)."""
        return self.regions[0].blocks[0]

    @property
    def parent_op(self) -> Operation | None:
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent

    @property
    def next_op(self) -> Operation | None:
        """The op after this one in its block (None for the last or a detached op); O(1)."""
        return self._next

    @property
    def prev_op(self) -> Operation | None:
        """The op before this one in its block (None for the first or a detached op); O(1)."""
        return self._prev

    def ancestors(self) -> Iterator[Operation]:
        """Enclosing ops, innermost first."""
        op = self.parent_op
        while op is not None:
            yield op
            op = op.parent_op

    def is_ancestor_of(self, other: Operation) -> bool:
        return any(a is self for a in other.ancestors())

    # -- traversal and mutation -------------------------------------------------------
    def walk(self) -> Iterator[Operation]:
        """This op and every op nested in it, pre-order (parents before children)."""
        stack = [self]
        while stack:
            op = stack.pop()
            yield op
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    child = block._tail
                    while child is not None:
                        stack.append(child)
                        child = child._prev

    def detach(self) -> Operation:
        """Remove from the parent block (uses are kept)."""
        if self.parent is not None:
            self.parent.remove(self)
        return self

    def erase(self) -> None:
        """Detach and drop all operand uses in this op and its nested ops.

        Raises ValueError if a result is still used outside the erased tree.
        """
        inside = {id(o) for o in self.walk()}
        for op in self.walk():
            for r in op.results:
                if any(id(u.op) not in inside for u in r.uses):
                    raise ValueError(f"cannot erase {op.name}: a result is still in use")
        self.detach()
        for op in self.walk():
            op.drop_operand_uses()

    def clone(self, mapping: dict[Value, Value] | None = None) -> Operation:
        """A deep copy; operands found in ``mapping`` are remapped, new values are added to it."""
        mapping = {} if mapping is None else mapping
        new = object.__new__(type(self))
        Operation.__init__(
            new,
            [mapping.get(v, v) for v in self._operands],
            [r.type for r in self.results],
            self.attributes,
            [],
            self.location,
            [r.name_hint for r in self.results],
        )
        for k, v in self.__dict__.items():
            if k not in new.__dict__:
                new.__dict__[k] = v
        for old, r in zip(self.results, new.results):
            mapping[old] = r
        for region in self.regions:
            new.add_region(region.clone(mapping))
        return new

    # -- hooks --------------------------------------------------------------------
    def verify_(self) -> None:
        """Op-specific invariants; raise :class:`VerifyError` via ``self.error``."""

    def print_(self, p) -> None:
        """The op's text; by default MLIR's generic form (``p.generic_op``)."""
        p.generic_op(self)

    def is_speculatable(self) -> bool:
        """Whether the op may run even where its result is not needed (MLIR's
        ``ConditionallySpeculatable``): by default whether it has ``AlwaysSpeculatable`` (every
        ``Pure`` op); ops that can fault on some operands (integer division) override it."""
        return AlwaysSpeculatable in self.trait_closure

    def memory_effects(self) -> tuple[MemoryEffect, ...] | None:
        """The op's memory effects (MLIR's ``MemoryEffectOpInterface``): ``()`` for none, None for
        unknown (the op may touch any memory). Default: ``()`` with ``NoMemoryEffect`` (``Pure``),
        the nested ops' effects with ``RecursiveMemoryEffects``, else None; ops with effects of
        their own override it (see affine_ir.traits)."""
        closure = self.trait_closure
        if NoMemoryEffect in closure:
            return ()
        if RecursiveMemoryEffects in closure:
            return nested_memory_effects(self)
        return None

    def error(self, message: str) -> VerifyError:
        """A VerifyError naming this op and its location."""
        return VerifyError(f"'{self.name}' op {message}", self.location)

    def __str__(self) -> str:
        from .printer import print_op

        return print_op(self)

    def __repr__(self) -> str:
        res = ", ".join(str(r.type) for r in self.results)
        where = f" at {self.location}" if self.location else ""
        return f"<{self.name} ({len(self._operands)} operands) -> ({res}){where}>"

    def _repr_html_(self) -> str:
        from .jupyter import highlight_html

        return highlight_html(str(self))


class OpList(Sequence):
    """The live, ordered ops of a :class:`Block` (``block.ops``): a read-only sequence view.

    Length, truth, the first and the last op are O(1); other indexing, slicing and iteration
    use an array of the ops that the block rebuilds (O(n)) only after it changed. Iterating
    sees the ops as they were when the iteration began. Change the ops through the block
    (``insert_before``, ``append``, ``Operation.detach``/``erase``) or :meth:`clear`.
    """

    __slots__ = ("_block",)

    def __init__(self, block: Block):
        self._block = block

    def __len__(self) -> int:
        return self._block._count

    def __bool__(self) -> bool:
        return self._block._count > 0

    def __getitem__(self, k):
        b = self._block
        if k == 0 and b._head is not None and not isinstance(k, slice):
            return b._head
        if k == -1 and b._tail is not None and not isinstance(k, slice):
            return b._tail
        return b._array()[k]

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._block._array())

    def __reversed__(self) -> Iterator[Operation]:
        return reversed(self._block._array())

    def __contains__(self, op: object) -> bool:
        return isinstance(op, Operation) and op.parent is self._block

    def index(self, op: Operation, *args) -> int:  # type: ignore[override]
        return self._block.index_of(op)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OpList):
            other = other._block._array()
        return isinstance(other, (list, tuple)) and list(self._block._array()) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def clear(self) -> None:
        """Detach every op (their uses are kept)."""
        while self._block._tail is not None:
            self._block.remove(self._block._tail)

    def __repr__(self) -> str:
        return f"OpList({list(self._block._array())!r})"


# Order keys of the ops of a block are spaced by this much, so that most insertions find a
# free key between their neighbours (MLIR's ``Operation::orderIndex``).
_ORDER_STRIDE = 1 << 16


class Block:
    """An ordered list of ops with block arguments.

    The ops form an intrusive doubly linked list (like MLIR's), so inserting before or after an
    op, appending and removing are O(1); :meth:`is_before` compares positions in O(1)
    amortized through order keys renumbered lazily; :attr:`ops` is a sequence view.
    """

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[str | None] | None = None):
        self.args: list[BlockArgument] = []
        self._head: Operation | None = None
        self._tail: Operation | None = None
        self._count = 0
        self._cached: list[Operation] | None = None
        self._positions: dict[Operation, int] | None = None
        self._orders_valid = True
        self.parent: Region | None = None
        for i, t in enumerate(arg_types):
            self.add_argument(t, arg_names[i] if arg_names else None)

    @property
    def ops(self) -> OpList:
        """The ops in order (a live read-only view; see :class:`OpList`)."""
        return OpList(self)

    def _array(self) -> list[Operation]:
        """The ops in order, as a list rebuilt only after a change (do not mutate it)."""
        if self._cached is None:
            out = []
            op = self._head
            while op is not None:
                out.append(op)
                op = op._next
            self._cached = out
        return self._cached

    def add_argument(self, type: Type, name_hint: str | None = None) -> BlockArgument:
        arg = BlockArgument(type, self, len(self.args), name_hint)
        self.args.append(arg)
        return arg

    def erase_argument(self, index: int) -> None:
        """Remove an unused argument; ValueError if it is still used."""
        if self.args[index].uses:
            raise ValueError("cannot erase a block argument that is still used")
        del self.args[index]
        for i, a in enumerate(self.args):
            a.index = i

    @property
    def parent_op(self) -> Operation | None:
        return None if self.parent is None else self.parent.parent

    @property
    def terminator(self) -> Operation | None:
        last = self._tail
        return last if last is not None and last.is_terminator else None

    # -- insertion and removal (O(1) but for ``insert`` at an inner index) -----------------
    def append(self, op: Operation) -> Operation:
        """Add ``op`` at the end."""
        return self._link(op, self._tail, None)

    def insert(self, index: int, op: Operation) -> Operation:
        """Insert ``op`` so that it is at ``index`` (list semantics: negative from the end, past
        the end appends). O(1) at the ends, O(n) inside."""
        n = self._count
        if index < 0:
            index = max(0, n + index)
        if index >= n:
            return self._link(op, self._tail, None)
        nxt = self._head if index == 0 else self._array()[index]
        return self._link(op, nxt._prev, nxt)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        """Insert ``op`` just before ``anchor`` (an op of this block)."""
        self._check_member(anchor)
        return self._link(op, anchor._prev, anchor)

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        """Insert ``op`` just after ``anchor`` (an op of this block)."""
        self._check_member(anchor)
        return self._link(op, anchor, anchor._next)

    def remove(self, op: Operation) -> None:
        """Unlink ``op`` from this block (its uses are kept)."""
        self._check_member(op)
        prev, nxt = op._prev, op._next
        if prev is None:
            self._head = nxt
        else:
            prev._next = nxt
        if nxt is None:
            self._tail = prev
        else:
            nxt._prev = prev
        op._prev = op._next = None
        op.parent = None
        self._count -= 1
        self._changed()  # the order keys of the others stay increasing

    def _check_member(self, op: Operation) -> None:
        if op.parent is not self:
            raise ValueError(f"{op.name} is not in this block")

    def _link(self, op: Operation, prev: Operation | None, nxt: Operation | None) -> Operation:
        if op.parent is not None:
            raise ValueError(f"{op.name} is already in a block; detach it first")
        op.parent = self
        op._prev, op._next = prev, nxt
        if prev is None:
            self._head = op
        else:
            prev._next = op
        if nxt is None:
            self._tail = op
        else:
            nxt._prev = op
        self._count += 1
        self._changed()
        if self._orders_valid:
            self._assign_order(op, prev, nxt)
        return op

    def _changed(self) -> None:
        self._cached = None
        self._positions = None

    def _assign_order(self, op: Operation, prev: Operation | None, nxt: Operation | None) -> None:
        """Give ``op`` a key between its neighbours' keys; mark the keys stale when none is free."""
        if nxt is None:
            op._order = (prev._order if prev is not None else 0) + _ORDER_STRIDE
        elif prev is None:
            op._order = nxt._order - _ORDER_STRIDE
        elif nxt._order - prev._order > 1:
            op._order = (prev._order + nxt._order) // 2
        else:
            self._orders_valid = False

    # -- positions ---------------------------------------------------------------------------
    def is_before(self, a: Operation, b: Operation) -> bool:
        """Whether ``a`` comes before ``b`` (both ops of this block); O(1) amortized."""
        self._check_member(a)
        self._check_member(b)
        if not self._orders_valid:
            key = 0
            op = self._head
            while op is not None:
                key += _ORDER_STRIDE
                op._order = key
                op = op._next
            self._orders_valid = True
        return a._order < b._order

    def index_of(self, op: Operation) -> int:
        """The position of ``op`` in this block (O(1) until the block next changes)."""
        self._check_member(op)
        if self._positions is None:
            self._positions = {o: i for i, o in enumerate(self._array())}
        return self._positions[op]

    def walk(self) -> Iterator[Operation]:
        for op in list(self._array()):
            yield from op.walk()

    def clone_into(self, target: Block, mapping: dict[Value, Value]) -> None:
        """Append clones of this block's ops to ``target`` (arguments must be mapped)."""
        for op in self._array():
            target.append(op.clone(mapping))


class Region:
    """A list of blocks owned by an op (in this IR almost always exactly one block)."""

    def __init__(self, blocks: Sequence[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        if len(self.blocks) != 1:
            raise ValueError(f"region has {len(self.blocks)} blocks, not one")
        return self.blocks[0]

    def clone(self, mapping: dict[Value, Value]) -> Region:
        new = Region()
        for b in self.blocks:
            nb = Block()
            for a in b.args:
                mapping[a] = nb.add_argument(a.type, a.name_hint)
            new.add_block(nb)
            b.clone_into(nb, mapping)
        return new


def structurally_equal(a: Operation, b: Operation) -> bool:
    """True when the two op trees have the same ops, types, attributes and dataflow.

    Names are ignored; values correspond by position. Values defined outside both
    trees must be the same object.
    """
    mapping: dict[int, Value] = {}
    return _ops_equal(a, b, mapping)


def _ops_equal(a: Operation, b: Operation, m: dict[int, Value]) -> bool:
    if a.name != b.name or a.attributes != b.attributes:
        return False
    if len(a._operands) != len(b._operands) or len(a.results) != len(b.results):
        return False
    for x, y in zip(a._operands, b._operands):
        if m.get(id(x), x) is not y:
            return False
    for x, y in zip(a.results, b.results):
        if x.type != y.type:
            return False
        m[id(x)] = y
    if len(a.regions) != len(b.regions):
        return False
    for ra, rb in zip(a.regions, b.regions):
        if len(ra.blocks) != len(rb.blocks):
            return False
        for ba, bb in zip(ra.blocks, rb.blocks):
            if len(ba.args) != len(bb.args) or len(ba.ops) != len(bb.ops):
                return False
            for x, y in zip(ba.args, bb.args):
                if x.type != y.type:
                    return False
                m[id(x)] = y
            if not all(_ops_equal(x, y, m) for x, y in zip(ba.ops, bb.ops)):
                return False
    return True
