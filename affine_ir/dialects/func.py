"""``func.func``, ``func.return``, ``func.call``."""

from __future__ import annotations

from ..attributes import SymbolRefAttr
from ..core import Block, Operation, Region
from ..printer import symbol_ref
from ..traits import AffineScope, IsolatedFromAbove
from ..types import FunctionType
from ._simple import ValuesTerminator, verify_terminator


class FuncOp(Operation):
    """A function: a name, a FunctionType, and a body (absent for a declaration)."""

    name = "func.func"
    traits = frozenset({IsolatedFromAbove, AffineScope})

    def __init__(self, sym_name: str, function_type: FunctionType, arg_names=None, attributes=None,
                 location=None, declaration: bool = False):
        regions = [] if declaration else [Region([Block(function_type.inputs, arg_names)])]
        attrs = {"sym_name": sym_name, "function_type": function_type}
        attrs.update(attributes or {})
        super().__init__(regions=regions, attributes=attrs, location=location)

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"]

    @property
    def function_type(self) -> FunctionType:
        return self.attributes["function_type"]

    @property
    def is_declaration(self) -> bool:
        return not self.regions

    @property
    def args(self):
        return self.body.args

    def print_(self, p) -> None:
        ft = self.function_type
        vis = self.attributes.get("sym_visibility")
        p.write("func.func " + (f"{vis} " if vis else "") + f"{symbol_ref(self.sym_name)}(")
        if self.is_declaration:
            p.write(", ".join(map(str, ft.inputs)) + ")")
        else:
            p.write(", ".join(f"{p.name_value(a, True)}: {a.type}" for a in self.args) + ")")
        if ft.results:
            res = ", ".join(map(str, ft.results))
            p.write(f" -> {res}" if len(ft.results) == 1 else f" -> ({res})")
        p.write(p.attr_dict(self, elide=("sym_name", "function_type", "sym_visibility"), keyword=True))
        if not self.is_declaration:
            p.write(" ")
            p.region(self.regions[0])

    @classmethod
    def parse_(cls, p, loc):
        attrs = {}
        if p.peek().kind == "id" and p.peek().text in ("private", "public", "nested"):
            attrs["sym_visibility"] = p.next().text
        name = p.parse_symbol_name("function name (@name)")
        p.expect("(")
        args, types = [], []
        declaration = p.peek().kind != "value"

        def arg():
            if declaration:
                types.append(p.parse_type())
                return
            args.append(p.parse_value_name())
            p.expect(":")
            types.append(p.parse_type())
            if p.at("{"):
                raise p.error("argument attributes are not supported")

        p.parse_comma_list(arg, ")")
        results = p.parse_result_types() if p.accept("->") else []
        if p.accept("attributes"):
            extra = p.parse_optional_attr_dict()
            for key in ("sym_name", "function_type", "sym_visibility"):
                if key in extra:
                    raise p.error(f"'{key}' is set by the syntax of 'func.func' and cannot appear in its "
                                  "attribute dictionary", extra.loc)
            attrs.update(extra)
        ft = FunctionType(tuple(types), tuple(results))
        op = cls(name, ft, attributes=attrs, location=loc, declaration=True)
        if p.at("{"):
            if declaration and types:
                raise p.error("a function with a body needs named arguments (%arg: type)")
            op.add_region(p.parse_region(list(zip(args, types)), isolated=True))
        elif not declaration:
            raise p.error("expected '{' to begin the function body")
        return op

    def verify_(self) -> None:
        parent = self.parent_op
        if parent is not None and parent.name != "builtin.module":
            raise self.error(f"@{self.sym_name} must be directly inside a module, not in '{parent.name}'")
        if self.is_declaration:
            if self.attributes.get("sym_visibility") in (None, "public"):
                raise self.error(f"declaration @{self.sym_name} cannot be public (write 'func.func private')")
            return
        ft = self.function_type
        if [a.type for a in self.args] != list(ft.inputs):
            raise self.error("argument types do not match the function type")
        verify_terminator(self, self.body, ReturnOp, ft.results, "returns", f"@{self.sym_name} declares",
                          f"@{self.sym_name}: ")


class ReturnOp(ValuesTerminator):
    """``return %a, %b : f32, i32``."""

    name = "func.return"
    keyword = "return"

    def verify_(self) -> None:
        if not isinstance(self.parent_op, FuncOp):
            raise self.error("must be directly inside a 'func.func'")


class CallOp(Operation):
    """``%r = call @f(%a) : (f32) -> f32``."""

    name = "func.call"

    def __init__(self, callee: str, args, result_types, location=None):
        super().__init__(args, result_types, {"callee": SymbolRefAttr(callee)}, location=location)

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(attributes.pop("callee").name, operands, result_types, location=location)

    @property
    def callee(self) -> str:
        return self.attributes["callee"].name

    def print_(self, p) -> None:
        ft = FunctionType(tuple(v.type for v in self.operands), tuple(r.type for r in self.results))
        p.write(f"func.call {symbol_ref(self.callee)}({p.values(self.operands)}){p.attr_dict(self, ('callee',))} "
                f": {ft}")

    @classmethod
    def parse_(cls, p, loc):
        callee = p.parse_symbol_name("callee (@name)")
        p.expect("(")
        args = p.parse_operands(")")
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        ft = p.parse_function_type()
        p.check_types(args, list(ft.inputs), tloc)
        return p.add_attributes(cls(callee, args, ft.results, location=loc), attrs)

    def verify_(self) -> None:
        module = self.parent
        while module is not None and module.parent_op is not None and module.parent_op.name != "builtin.module":
            module = module.parent_op.parent
        mod = module.parent_op if module is not None else None
        target = mod.lookup(self.callee) if mod is not None else None
        if target is None:
            raise self.error(f"'@{self.callee}' does not reference a function in this module")
        ft = target.function_type
        if [v.type for v in self.operands] != list(ft.inputs) or [r.type for r in self.results] != list(ft.results):
            raise self.error(f"type does not match the callee @{self.callee}: {ft}")
