"""``builtin.module``: the top-level container of functions."""

from __future__ import annotations

from ..core import Block, Operation, Region


class ModuleOp(Operation):
    """``module { ... }``: a single-block region of functions, no terminator."""

    name = "builtin.module"
    isolated_from_above = True

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
            p.write(f" @{self.attributes['sym_name']}")
        p.write(p.attr_dict(self, elide=("sym_name",), keyword=True))
        p.write(" ")
        p.region(self.regions[0])

    @classmethod
    def parse_(cls, p, loc):
        name = None
        if p.peek().kind == "symbol":
            name = p.next().text[1:]
        attrs = p.parse_optional_attr_dict() if p.accept("attributes") else {}
        region = p.parse_region(isolated=True)
        op = cls(attributes=attrs, location=loc, sym_name=name)
        op.regions.clear()
        op.add_region(region)
        return op

    def verify_(self) -> None:
        for op in self.body.ops:
            if op.is_terminator:
                raise self.error("must not contain a terminator")

    def _repr_html_(self) -> str:
        from ..jupyter import highlight_html

        return highlight_html(str(self))

    def __repr__(self) -> str:
        names = ", ".join("@" + f.sym_name for f in self.functions)
        return f"<module with {len(self.body.ops)} ops: {names}>"
