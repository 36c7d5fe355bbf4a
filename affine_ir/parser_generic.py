"""MLIR's generic op form: ``"name"(%a, %b) <{props}> ({regions}) {attrs} : (t1, t2) -> t3``.

Two uses, as in ``mlir-opt``:

- an op of an unregistered dialect (``"test.foo"(%i) : (index) -> ()``) becomes an
  :class:`~affine_ir.dialects.unregistered.UnregisteredOp`, only when the parser was asked
  to allow them (``allow_unregistered=True``, ``affine-opt --allow-unregistered-dialect``);
- a registered op without regions whose class has a ``from_generic`` constructor
  (``"affine.apply"(%i) {map = affine_map<(d0) -> (d0 + 1)>} : (index) -> index``) is
  built through that constructor, so it is the same op its custom syntax gives. Its own
  invariants are checked once the whole module is parsed (``check_generic_ops``).

Properties (``<{...}>``) are read as attributes. Successors (``[^bb1]``) are not supported.
"""

from __future__ import annotations

from .core import OP_REGISTRY, Operation, Value
from .errors import Location, ParseError, VerifyError
from .types import FunctionType, Type

_UNREGISTERED_HINT = "pass allow_unregistered=True (affine-opt --allow-unregistered-dialect) to keep it as an opaque op"


def parse_generic_op(p, loc: Location) -> Operation:
    """The generic op at the parser's position (its name is the next token, a string)."""
    from .dialects.unregistered import KNOWN_DIALECTS, UnregisteredOp, dialect_of

    tok = p.next()
    name = p.unquote(tok.text, tok.loc)
    if not name:
        raise p.error("expected an operation name in the string of the generic op form, found \"\"", tok.loc)
    cls = OP_REGISTRY.get(name)
    if cls is None:
        if dialect_of(name) in KNOWN_DIALECTS:
            raise p.error(f"unknown operation '{name}' (the '{dialect_of(name)}' dialect is modelled here and has "
                          "no such op)", tok.loc)
        if not p.allow_unregistered:
            raise p.error(f"unregistered operation '{name}' in the generic op form; {_UNREGISTERED_HINT}", tok.loc)
    operands, attrs, regions, ft, tloc = _parse_generic_parts(p, cls is None)
    if cls is None:
        return UnregisteredOp(name, operands, ft.results, attrs, regions, location=loc)
    return _build_registered(p, cls, operands, list(ft.results), attrs, loc, tloc)


def _parse_generic_parts(p, allow_regions: bool):
    p.expect("(", "to begin the operand list of the generic op")
    operands = p.parse_operands(")")
    if p.at("["):
        raise p.error("successors ('[^bb1]') are not supported: regions hold a single block")
    attrs = {}
    if p.accept("<"):
        if not p.at("{"):
            p.expect("{", "to begin the properties of the generic op")
        attrs = p.parse_optional_attr_dict()
        p.expect(">")
    regions = []
    if p.at("("):
        if not allow_regions:
            raise p.error("the generic form of a registered op with regions is not supported; use its custom "
                          "syntax")
        p.next()
        regions = p.parse_comma_list(p.parse_region, ")")
    more = p.parse_optional_attr_dict()
    for key, value in more.items():
        if key in attrs:
            raise p.error(f"attribute '{key}' is given both as a property and as an attribute", more.loc)
        attrs[key] = value
    tloc = p.loc()
    p.expect(":")
    ft = p.parse_function_type()
    if len(ft.inputs) != len(operands):
        raise p.error(f"{len(operands)} operands but the type {ft} has {len(ft.inputs)}", tloc)
    for v, t in zip(operands, ft.inputs):
        p.check_type(v, t, tloc)
    return operands, attrs, regions, ft, tloc


def _build_registered(p, cls, operands: list[Value], result_types: list[Type], attrs: dict, loc: Location,
                      tloc: Location) -> Operation:
    """A registered op from its generic parts, through the class's ``from_generic``."""
    make = getattr(cls, "from_generic", None)
    if make is None:
        raise p.error(f"the generic form of '{cls.name}' is not supported; use its custom syntax", loc)
    attrs = dict(attrs)
    try:
        op = make(operands, result_types, attrs, loc)
    except KeyError as e:
        raise p.error(f"'{cls.name}' in the generic form needs the attribute {e}", loc) from None
    except (AttributeError, IndexError, TypeError, ValueError) as e:
        raise p.error(f"'{cls.name}' in the generic form is malformed ({type(e).__name__}: {e})", loc) from None
    made = [r.type for r in op.results]
    if made != result_types:
        raise p.error(f"'{cls.name}' defines results of type ({', '.join(map(str, made))}), but the generic form "
                      f"says {FunctionType(tuple(v.type for v in operands), tuple(result_types))}", tloc)
    p.add_attributes(op, attrs)
    p.generic_ops.append(op)
    return op


def check_generic_ops(p) -> None:
    """Check the invariants of the registered ops written in the generic form (after the whole
    module is parsed, so that their parents exist): a ParseError at the first broken one."""
    for op in p.generic_ops:
        try:
            op.verify_()
        except VerifyError as e:
            raise ParseError(e.message, e.location or op.location) from None
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as e:
            raise ParseError(f"'{op.name}' op is malformed ({type(e).__name__}: {e})", op.location) from None
