"""``builtin.module``: the top-level container of functions."""

from __future__ import annotations

from ..core import Block, Operation, Region
from ..printer import symbol_ref
from ..traits import AffineScope, IsolatedFromAbove
from ._simple import set_regions


class ModuleOp(Operation):
    """``module { ... }``: a single-block region of functions, no terminator."""

    name = "builtin.module"
    traits = frozenset({IsolatedFromAbove, AffineScope})

    def __init__(self, ops=(), attributes=None, location=None, sym_name: str | None = None):
        super().__init__(regions=[Region([Block()])], attributes=attributes, location=location)
        if sym_name:
            self.attributes["sym_name"] = sym_name
        for op in ops:
            self.body.append(op)

    @property
    def functions(self) -> list:
        """The ``func.func`` ops of the module, in order."""
        from .func import FuncOp

        return [op for op in self.body.ops if isinstance(op, FuncOp)]

    def lookup(self, name: str):
        """The function named ``name``, or None."""
        for f in self.functions:
            if f.sym_name == name:
                return f
        return None

    def print_(self, p) -> None:
        p.write("module")
        if "sym_name" in self.attributes:
            p.write(" " + symbol_ref(self.attributes["sym_name"]))
        p.write(p.attr_dict(self, elide=("sym_name",), keyword=True))
        p.write(" ")
        p.region(self.regions[0])

    @classmethod
    def parse_(cls, p, loc):
        name = None
        if p.peek().kind == "symbol":
            name = p.parse_symbol_name()
        attrs = p.parse_optional_attr_dict() if p.accept("attributes") else {}
        if "sym_name" in attrs:
            raise p.error("'sym_name' is set by the syntax of 'builtin.module' (module @name) and cannot appear "
                          "in its attribute dictionary", attrs.loc)
        region = p.parse_region(isolated=True)
        return set_regions(cls(attributes=attrs, location=loc, sym_name=name), region)

    def verify_(self) -> None:
        if self.body.args:
            raise self.error("body block takes no arguments")
        seen: set[str] = set()
        for op in self.body.ops:
            if op.is_terminator:
                raise self.error("must not contain a terminator")
            name = op.attributes.get("sym_name") if op.name == "func.func" else None
            if name is not None:
                if name in seen:
                    raise op.error(f"redefinition of symbol @{name}")
                seen.add(name)

    def _repr_html_(self) -> str:
        from ..jupyter import highlight_html

        return highlight_html(str(self))

    def __repr__(self) -> str:
        names = ", ".join("@" + f.sym_name for f in self.functions)
        return f"<module with {len(self.body.ops)} ops: {names}>"
