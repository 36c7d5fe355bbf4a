"""MLIR text for ops and modules.

``print_op`` gives MLIR's pretty syntax. Affine maps and sets used by ops are printed
as ``#map``/``#set`` aliases at the top of a module, as MLIR does. Value names come
from name hints made unique within each function; values without a hint are numbered
(``%0``, ``%arg0``). Printing is deterministic, so print -> parse -> print is a fixpoint.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .affine_map import AffineMap, IntegerSet
from .attributes import ArrayAttr, SymbolRefAttr, UnitAttr, attr_str, quote_string
from .core import Block, Operation, Region, Value
from .types import FunctionType

_NAME_OK = re.compile(r"[A-Za-z_$.][A-Za-z0-9_$.-]*\Z")


def symbol_ref(name: str) -> str:
    """``@name``, or ``@"quoted name"`` when the name is not a bare identifier."""
    return "@" + (name if _NAME_OK.match(name) else quote_string(name))


class Printer:
    """Accumulates text; op classes call its helpers from their ``print_`` method."""

    def __init__(self, use_aliases: bool = True):
        self.out: list[str] = []
        self.indent = 0
        self.aliases: dict | None = {} if use_aliases else None
        self._alias_counts = {"map": 0, "set": 0}
        # Per scope: value -> name, names used, [next %N, next %argN], next suffix per hint (%cst_3).
        self._scopes: list[tuple[dict[Value, str], set[str], list[int], dict[str, int]]] = []
        self.push_name_scope()

    # -- names ------------------------------------------------------------------
    def push_name_scope(self) -> None:
        self._scopes.append(({}, set(), [0, 0], {}))

    def pop_name_scope(self) -> None:
        self._scopes.pop()

    def _used(self, name: str) -> bool:
        return any(name in used for _, used, _, _ in self._scopes)

    def name_value(self, v: Value, is_arg: bool = False) -> str:
        """Assign (or return) the printed name of ``v`` in the current scope."""
        for names, *_ in reversed(self._scopes):
            if v in names:
                return "%" + names[v]
        hint = v.name_hint
        if hint is None and hasattr(v, "op") and hasattr(v.op, "suggest_name"):
            hint = v.op.suggest_name()
        name = self._fresh_name(hint, is_arg)
        self._scopes[-1][0][v] = name
        return "%" + name

    def name_result_group(self, results: Sequence[Value]) -> str:
        """Name the results of a multi-result op as one group: ``%r:2`` (uses print ``%r#0``, ``%r#1``)."""
        name = self._fresh_name(results[0].name_hint, False)
        names = self._scopes[-1][0]
        for k, r in enumerate(results):
            names[r] = f"{name}#{k}"
        return f"%{name}:{len(results)}"

    def _fresh_name(self, hint: str | None, is_arg: bool) -> str:
        _, used, counters, suffixes = self._scopes[-1]
        if hint and _NAME_OK.match(hint) and not hint.isdigit():
            name = hint
            k = suffixes.get(hint, 0)
            while self._used(name):
                name = f"{hint}_{k}"
                k += 1
            if name != hint:
                suffixes[hint] = k
        else:
            while True:
                slot = 1 if is_arg else 0
                name = f"arg{counters[1]}" if is_arg else str(counters[0])
                counters[slot] += 1
                if not self._used(name):
                    break
        used.add(name)
        return name

    def value(self, v: Value) -> str:
        for names, *_ in reversed(self._scopes):
            if v in names:
                return "%" + names[v]
        return "%<<UNKNOWN SSA VALUE>>"

    def values(self, vs: Sequence[Value]) -> str:
        return ", ".join(self.value(v) for v in vs)

    def typed_values(self, vs: Sequence[Value]) -> str:
        """`` %a, %b : f32, i32`` ('' for no values), as ``return`` and ``affine.yield`` end."""
        if not vs:
            return ""
        return f" {self.values(vs)} : " + ", ".join(str(v.type) for v in vs)

    # -- output -----------------------------------------------------------------
    def write(self, s: str) -> None:
        self.out.append(s)

    def newline(self) -> None:
        self.out.append("\n" + "  " * self.indent)

    # -- attributes -------------------------------------------------------------
    def map_ref(self, m: AffineMap | IntegerSet) -> str:
        """The alias (``#map3``) of a map or set, made on first use, or its full text when aliases are off."""
        if self.aliases is None:
            return attr_str(m)
        alias = self.aliases.get(m)
        if alias is None:
            kind = "map" if isinstance(m, AffineMap) else "set"
            n = self._alias_counts[kind]
            self._alias_counts[kind] = n + 1
            alias = self.aliases[m] = f"#{kind}" + (str(n) if n else "")
        return alias

    def attr(self, a) -> str:
        if isinstance(a, (AffineMap, IntegerSet)):
            return self.map_ref(a)
        if isinstance(a, SymbolRefAttr):
            return symbol_ref(a.name)
        if isinstance(a, ArrayAttr):
            return "[" + ", ".join(self.attr(e) for e in a.elements) + "]"
        return attr_str(a)

    def attr_dict(self, op: Operation, elide: Sequence[str] = (), keyword: bool = False) -> str:
        """`` {a = 1 : i64, flag}`` for attributes not in ``elide`` ('' when none)."""
        items = []
        for k in sorted(op.attributes):
            if k in elide:
                continue
            v = op.attributes[k]
            key = k if _NAME_OK.match(k) else attr_str(k)
            items.append(key if isinstance(v, UnitAttr) else f"{key} = {self.attr(v)}")
        if not items:
            return ""
        return (" attributes {" if keyword else " {") + ", ".join(items) + "}"

    def dim_and_symbol_list(self, operands: Sequence[Value], num_dims: int) -> str:
        """``(%d0, %d1)[%s0]`` as MLIR prints the operands of a map."""
        dims = self.values(operands[:num_dims])
        syms = operands[num_dims:]
        return f"({dims})" + (f"[{self.values(syms)}]" if syms else "")

    def map_of_ssa_ids(self, m: AffineMap, operands: Sequence[Value]) -> str:
        """``%i + 1, symbol(%n)``: the map's results with operands substituted.

        Printed in the form of ``canonical_ssa_map`` (what the parser gives back), also when the
        operands have changed since the map was set: a value bound to several dims (``d0 + d1``
        on ``(%c, %c)``, as CSE can leave) is printed as one (``%c * 2``), a value bound to a dim
        and a symbol stays both (``%n + symbol(%n)``, as the parser reads it), so the text is a
        fixpoint of print -> parse -> print."""
        from .dialects.affine_symbols import canonical_ssa_map

        m, operands = canonical_ssa_map(m, operands)
        dn = [self.value(v) for v in operands[: m.num_dims]]
        sn = [f"symbol({self.value(v)})" for v in operands[m.num_dims :]]
        return ", ".join(e.to_str(dn, sn) for e in m.results)

    # -- regions ----------------------------------------------------------------
    def region(self, region: Region, print_entry_args: bool = False, print_empty: bool = True) -> None:
        """Print ``{ ... }``; entry block arguments are assumed already named by the op."""
        block = region.blocks[0] if region.blocks else None
        self.write("{")
        self.indent += 1
        if block is not None:
            if print_entry_args and block.args:
                self.indent -= 1  # block labels stand one level out, as MLIR prints them
                self.newline()
                self.indent += 1
                args = ", ".join(f"{self.name_value(a, True)}: {a.type}" for a in block.args)
                self.write(f"^bb0({args}):")
            self.block_ops(block)
        self.indent -= 1
        self.newline()
        self.write("}")

    def block_ops(self, block: Block, skip_terminator_if=None) -> None:
        for op in block.ops:
            if skip_terminator_if is not None and op is block.ops[-1] and skip_terminator_if(op):
                continue
            self.newline()
            self.op(op)

    def generic_op(self, op: Operation) -> None:
        """``"name"(%a, %b) ({regions}) {attrs} : (T1, T2) -> T3``: MLIR's generic form, which every
        op prints in unless its class defines a custom ``print_``."""
        self.write(f"{quote_string(op.name)}({self.values(op.operands)})")
        if op.regions:
            self.write(" (")
            for k, region in enumerate(op.regions):
                if k:
                    self.write(", ")
                self.region(region, print_entry_args=True)
            self.write(")")
        ft = FunctionType(tuple(v.type for v in op.operands), tuple(r.type for r in op.results))
        self.write(f"{self.attr_dict(op)} : {ft}")

    def op(self, op: Operation) -> None:
        if len(op.results) > 1 and len({r.name_hint for r in op.results}) == 1:
            self.write(self.name_result_group(op.results) + " = ")
        elif op.results:
            names = [self.name_value(r) for r in op.results]
            self.write(", ".join(names) + " = ")
        if op.isolated_from_above:
            self.push_name_scope()
            op.print_(self)
            self.pop_name_scope()
        else:
            op.print_(self)


def print_op(op: Operation, use_aliases: bool = True) -> str:
    """MLIR text of ``op`` (a module prints its alias definitions first)."""
    p = Printer(use_aliases)
    if op.parent is not None:
        _name_outer_values(p, op)
    p.op(op)
    aliases = sorted((p.aliases or {}).items(), key=lambda item: isinstance(item[0], IntegerSet))
    head = "".join(f"{name} = {attr_str(m)}\n" for m, name in aliases)
    return head + "".join(p.out).lstrip("\n") + "\n"


def _name_outer_values(p: Printer, op: Operation) -> None:
    """Give names to values defined outside ``op`` that it uses (printing a nested op)."""
    inside = set()
    for inner in op.walk():
        inside.update(id(r) for r in inner.results)
        for region in inner.regions:
            for block in region.blocks:
                inside.update(id(a) for a in block.args)
    for inner in op.walk():
        for v in inner.operands:
            if id(v) not in inside:
                p.name_value(v)
