"""Recursive-descent parser for the MLIR text this IR prints.

``parse(text)`` returns a module; any error raises :class:`ParseError` with the file,
line and column of the offending token and what was expected there. Op classes parse
their own custom syntax through the helper methods of :class:`Parser`.
"""

from __future__ import annotations

from .core import OP_REGISTRY, Block, Operation, Region
from .errors import ParseError
from .lexer import Token
from .parser_affine import AffineParser, SSAMapBuilder
from .parser_base import MAX_NESTING, ParserBase, describe_token
from .parser_generic import check_generic_ops, parse_generic_op
from .parser_types import AttrDict, TypeAttrParser
from .types import Type

__all__ = ["MAX_NESTING", "AffineParser", "AttrDict", "ParseError", "Parser", "ParserBase", "SSAMapBuilder",
           "TypeAttrParser", "describe_token", "parse"]

_describe = describe_token


class Parser(AffineParser):
    """The whole parser: regions, ops and modules, on top of types, attributes and affine maps.

    ``allow_unregistered``: accept ops of unregistered dialects in the generic form, as
    opaque ``UnregisteredOp`` (``mlir-opt --allow-unregistered-dialect``).
    """

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0,
                 allow_unregistered: bool = False):
        super().__init__(text, filename, line_offset)
        self.allow_unregistered = allow_unregistered
        # Registered ops written in the generic form, checked once the module is complete.
        self.generic_ops: list[Operation] = []

    # -- regions and ops ------------------------------------------------------------
    def parse_region(self, args: list[tuple[Token, Type]] = (), isolated: bool = False) -> Region:
        """``{ ops }``; ``args`` are the entry block arguments the op syntax already named."""
        open_loc = self.loc()
        self.enter("regions")
        self.expect("{")
        self.push_scope(isolated)
        block = Block()
        for tok, t in args:
            self.define(tok, block.add_argument(t))
        if self.peek().kind == "block":
            self._parse_block_header(block, bool(args))
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error(f"expected '}}' to close the region opened at {open_loc.line}:{open_loc.col}, "
                                 "found end of input")
            if self.peek().kind == "block":
                raise self.error("regions with more than one block are not supported")
            block.append(self.parse_op())
        self.next()
        self.pop_scope()
        self.leave()
        return Region([block])

    def _parse_block_header(self, block: Block, has_args: bool) -> None:
        tok = self.next()
        if has_args:
            raise self.error("entry block arguments are already defined by the op", tok.loc)
        if self.accept("("):

            def arg():
                name = self.parse_value_name()
                self.expect(":")
                self.define(name, block.add_argument(self.parse_type()))

            self.parse_comma_list(arg, ")")
        self.expect(":")

    def parse_op(self) -> Operation:
        """One op, with its result names bound (an op may leave its results unnamed, as in
        MLIR: ``arith.addi %i, %i : index`` as a statement).

        The op's location is where its statement starts: the first result name, or the
        op name when it has no results. A trailing location (``loc(...)``) is skipped.
        """
        loc = self.loc()
        results, counts = self._parse_result_names()
        tok = self.peek()
        if tok.kind == "string":
            op = parse_generic_op(self, loc)
        elif tok.kind == "id":
            self.next()
            cls = OP_REGISTRY.get(tok.text) or OP_REGISTRY.get("func." + tok.text) or OP_REGISTRY.get(
                "builtin." + tok.text)
            if cls is None:
                raise self.error(f"unknown operation '{tok.text}'", tok.loc)
            op = cls.parse_(self, loc)
        else:
            raise self.error(f"expected operation name, found {_describe(tok)}")
        op.location = loc
        total = sum(counts)
        if total and total != len(op.results):
            n = len(op.results)
            raise self.error(f"'{op.name}' defines {n} result{'' if n == 1 else 's'}, but {total} "
                             f"{'name was' if total == 1 else 'names were'} given", loc)
        k = 0
        for tok, n in zip(results, counts):
            self.define(tok, op.results[k : k + n])
            k += n
        self._skip_location()
        return op

    def _parse_result_names(self) -> tuple[list[Token], list[int]]:
        """``%a, %b:2 =`` before an op: the names and how many results each one binds."""
        results: list[Token] = []
        counts: list[int] = []
        if self.peek().kind != "value":
            return results, counts
        while True:
            tok = self.parse_value_name()
            n = 1
            if self.accept(":"):
                cloc = self.loc()
                n = self.parse_integer("result count")
                if n < 1:
                    raise self.error(f"expected a positive result count, found {n}", cloc)
            results.append(tok)
            counts.append(n)
            if not self.accept(","):
                break
        self.expect("=")
        return results, counts

    def _skip_location(self) -> None:
        """Skip a trailing ``loc(...)`` (source locations are not kept from text)."""
        tok = self.peek()
        if tok.kind != "id" or tok.text != "loc" or not self.lex.text.startswith("(", tok.pos + 3):
            return
        self.next()
        open_tok = self.next()
        depth = 1
        while depth:
            t = self.next()
            if t.kind == "eof":
                raise self.error(f"expected ')' to close the location opened at {open_tok.loc.line}:"
                                 f"{open_tok.loc.col}, found end of input")
            depth += (t.text == "(") - (t.text == ")") if t.kind == "punct" else 0

    # -- top level -------------------------------------------------------------------
    def parse_module(self) -> Operation:

        self._parse_alias_definitions()
        tok = self.peek()
        if tok.kind == "id" and tok.text in ("module", "builtin.module"):
            module = self.parse_op()
            if self.peek().kind != "eof":
                module = self._wrap([module])
        else:
            module = self._wrap([])
        self.finish_module()
        check_generic_ops(self)
        return module

    def _wrap(self, ops: list[Operation]) -> Operation:
        from .dialects.builtin import ModuleOp

        loc = ops[0].location if ops else self.loc()
        module = ModuleOp(location=loc)
        for op in ops:
            module.body.append(op)
        while self.peek().kind != "eof":
            if self.peek().kind in ("hash", "bang"):
                what = "attribute" if self.peek().kind == "hash" else "type"
                raise self.error(f"{what} alias definitions must come before all operations")
            module.body.append(self.parse_op())
        return module

    def _parse_alias_definitions(self) -> None:
        """``#name = attribute`` and ``!name = type`` lines before the first op (MLIR's aliases; a name
        with a '.' is reserved for dialect attributes and types, as in MLIR)."""
        while self.peek().kind in ("hash", "bang"):
            tok = self.next()
            is_type = tok.kind == "bang"
            what, table = ("type", self.type_aliases) if is_type else ("attribute", self.aliases)
            if tok.text in table:
                raise self.error(f"redefinition of {what} alias '{tok.text}'", tok.loc)
            if is_type and "." in tok.text:
                raise self.error(f"type alias names may not contain '.' (reserved for dialect types): "
                                 f"'{tok.text}'", tok.loc)
            self.expect("=")
            table[tok.text] = self.parse_type() if is_type else self.parse_attribute()


def parse(text: str, filename: str = "<string>", line_offset: int = 0, allow_unregistered: bool = False) -> Operation:
    """Parse MLIR text into a ``builtin.module`` (ops outside a module are wrapped in one).

    Raises :class:`ParseError` at the first error, with file, line and column. The
    result is not verified; call ``verify`` for that (``affine_ir.parse`` does both).
    With ``allow_unregistered``, ops of unregistered dialects in the generic form
    (``"test.foo"(%i) : (index) -> ()``) become opaque ``UnregisteredOp``s.
    """
    parser = Parser(text, filename, line_offset, allow_unregistered)
    try:
        return parser.parse_module()
    except RecursionError:
        # A safety net: ``enter`` bounds the nesting we know of.
        raise parser.error("input nested too deeply to parse") from None
