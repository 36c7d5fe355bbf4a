"""isl results back to the IR: isl ``Aff``/``PwAff`` as AffineExprs and loop-bound maps,
point counts, parameter fixing, and operation budgets that keep pathological isl
computations bounded. Used by regions and slices (the other half of the isl bridge)."""

from __future__ import annotations

import contextlib

import islpy as isl

from affine_ir import AffineExpr, AffineMap, Value

from .isl_bridge import Scop, UnsupportedError


def int_val(ctx: isl.Context, value: int) -> isl.Val:
    """The isl value of the Python int ``value``, of any size (``Val.int_from_si`` takes only a C
    ``long``: a div of denominator 2**64, from loops of huge steps, raised TypeError)."""
    if -(1 << 62) <= value < (1 << 62):
        return isl.Val.int_from_si(ctx, value)
    return isl.Val.read_from_str(ctx, str(value))


def aff_to_expr(aff: isl.Aff, in_names: dict[int, AffineExpr], param_names: dict[int, AffineExpr]) -> AffineExpr:
    """An isl ``Aff`` as an AffineExpr; ``in_names``/``param_names`` map isl input dims and
    parameters (by position) to the expressions they stand for. Raises UnsupportedError for a
    rational (non-integral) function."""
    den = val_to_int(aff.get_denominator_val())
    if den != 1:  # (checked first: a rational coefficient has no Python int value)
        raise UnsupportedError(f"rational affine function {aff}")
    total = AffineExpr.constant(0)
    dt = isl.dim_type
    for kind, table in ((dt.in_, in_names), (dt.param, param_names)):
        for k in range(aff.dim(kind)):
            c = val_to_int(aff.get_coefficient_val(kind, k)) * den
            if c:
                total = total + table[k] * int(c)
    for k in range(aff.dim(dt.div)):
        c = val_to_int(aff.get_coefficient_val(dt.div, k)) * den
        if c:
            div = aff.get_div(k)
            d = val_to_int(div.get_denominator_val())
            numer = aff_to_expr(div.scale_val(int_val(aff.get_ctx(), d)), in_names, param_names)
            total = total + numer.floordiv(int(d)) * int(c)
    total = total + int(val_to_int(aff.get_constant_val()) * den)
    return total


class BudgetExceeded(UnsupportedError):
    """An isl computation needed more operations than its budget (see :func:`isl_budget`)."""


@contextlib.contextmanager
def isl_budget(operations: int):
    """Bound the isl operations done inside the ``with`` (isl's ``max_operations`` quota), so
    that a query on a pathological set fails fast instead of taking seconds and gigabytes:
    isl running out of it raises :class:`BudgetExceeded`. Inside an outer budget, the outer
    one applies."""
    ctx = isl.DEFAULT_CONTEXT
    if ctx.get_max_operations():
        yield
        return
    ctx.set_max_operations(operations)
    ctx.reset_operations()
    try:
        yield
    except isl.Error as e:
        # islpy binds no error code (isl_ctx_last_error): isl's own quota message is all it says
        if "operations" in str(e):
            raise BudgetExceeded(f"isl gave up after {operations} operations") from None
        raise
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()


def distinct_affs(pw: isl.PwAff) -> list[isl.Aff]:
    """The different affine functions of the pieces of ``pw``, in piece order."""
    out: list[isl.Aff] = []
    for _, aff in pw.get_pieces():
        if not any(aff.plain_is_equal(a) for a in out):
            out.append(aff)
    return out


def pw_aff_as_extremum(pw: isl.PwAff, ctx: isl.Set, kind: str, max_pieces: int = 6) -> list[isl.Aff] | None:
    """Affine functions whose ``max`` (kind ``"max"``) or ``min`` (``"min"``) equals ``pw``
    everywhere on ``ctx`` -- how a piecewise bound becomes a multi-result loop-bound map
    (``max`` of lower bounds, ``min`` of upper bounds); a single one when ``pw`` is affine on
    ``ctx``. Redundant functions are dropped. None when no such list exists (or ``pw`` has
    more than ``max_pieces`` different functions). ``pw`` must be defined on all of ``ctx``
    (as ``dim_min``/``dim_max`` of a map are on its domain).

    The functions of ``pw``'s pieces attain ``pw`` everywhere, so their max is ``pw`` exactly
    when each of them is ``<= pw`` (``>=`` for min) on every piece: emptiness checks of
    basic sets, never a piecewise max (which isl may take seconds to build)."""
    if ctx.is_empty():
        return None
    pieces = [(dom.intersect(ctx), aff) for dom, aff in pw.get_pieces()]
    pieces = [(d, a) for d, a in pieces if not d.is_empty()]
    affs: list[isl.Aff] = []
    for _, aff in pieces:
        if not any(aff.plain_is_equal(a) for a in affs):
            affs.append(aff)
    if len(affs) > max_pieces:
        return None
    if not all(_bounds_pieces(a, pieces, kind) for a in affs):
        return None
    k = 0
    while k < len(affs) and len(affs) > 1:
        rest = affs[:k] + affs[k + 1 :]
        if all(_attained(rest, d, b) for d, b in pieces):
            affs = rest
        else:
            k += 1
    return [_simplest(a, ctx) for a in affs]


def _simplest(aff: isl.Aff, ctx: isl.Set) -> isl.Aff:
    """``aff`` simplified on ``ctx`` (e.g. ``4 * floor(y / 2)`` -> ``2y`` where ``y`` is even)
    when that leaves an integral function with fewer divisions."""
    g = aff.gist(ctx)
    if val_to_int(g.get_denominator_val()) == 1 and g.dim(isl.dim_type.div) < aff.dim(isl.dim_type.div):
        return g
    return aff


def aff_bounds_pw(aff: isl.Aff, pw: isl.PwAff, ctx: isl.Set, kind: str) -> bool:
    """Whether ``aff <= pw`` (kind ``"max"``: ``aff`` is a lower bound of ``pw``) or
    ``aff >= pw`` (``"min"``) everywhere on ``ctx`` (piece by piece: basic-set emptiness
    checks, cheap where ``pw.ge_set`` can take seconds)."""
    pieces = [(dom.intersect(ctx), a) for dom, a in pw.get_pieces()]
    return _bounds_pieces(aff, [(d, a) for d, a in pieces if not d.is_empty()], kind)


def _bounds_pieces(aff: isl.Aff, pieces: list[tuple[isl.Set, isl.Aff]], kind: str) -> bool:
    for d, b in pieces:
        beyond = aff.gt_set(b) if kind == "max" else aff.lt_set(b)
        if not beyond.intersect(d).is_empty():
            return False
    return True


def _attained(affs: list[isl.Aff], dom: isl.Set, value: isl.Aff) -> bool:
    """Whether at each point of ``dom`` one of ``affs`` equals ``value``."""
    left = dom
    for a in affs:
        left = left.subtract(a.eq_set(value))
        if left.is_empty():
            return True
    return left.is_empty()


def integral_pw_aff(pw: isl.PwAff) -> isl.PwAff:
    """``pw`` with each rational piece ``e / d`` (integral on its piece, as isl writes values
    on a strided lattice, e.g. ``(1 + 2i)/3`` where ``i mod 3 = 1``) replaced by
    ``floor(e / d)``: the same values, and an integer function isl's ``min_val``/``max_val``
    accept."""
    if all(val_to_int(a.get_denominator_val()) == 1 for _, a in pw.get_pieces()):
        return pw
    out = None
    for dom, aff in pw.get_pieces():
        if val_to_int(aff.get_denominator_val()) != 1:
            aff = aff.floor()
        piece = isl.PwAff.alloc(dom, aff)
        out = piece if out is None else out.union_add(piece)
    return out


def affs_to_exprs(affs: list[isl.Aff], num_dims: int, scop: Scop) -> list[AffineExpr]:
    """isl Affs over ``num_dims`` input dims and Scop parameters as AffineExprs: input dim
    ``k`` becomes ``d<k>``, the parameter named like the Scop's ``j``-th parameter
    ``s<j>``. A rational ``e / d`` (integral where it is used) becomes ``e floordiv d``."""
    order = {n: j for j, (n, _) in enumerate(scop.params.values())}
    out = []
    for aff in affs:
        if val_to_int(aff.get_denominator_val()) != 1:
            aff = aff.floor()
        sp = aff.get_space()
        params = {}
        for k in range(aff.dim(isl.dim_type.param)):
            pname = sp.get_dim_name(isl.dim_type.param, k)
            if pname not in order:
                raise UnsupportedError(f"parameter {pname} is not a symbol of the Scop")
            params[k] = AffineExpr.symbol(order[pname])
        dims = {k: AffineExpr.dim(k) for k in range(num_dims)}
        out.append(aff_to_expr(aff, dims, params))
    return out


def compact_symbols(exprs_lists: list[list[AffineExpr]], num_dims: int,
                    scop: Scop) -> tuple[list[AffineMap], list[Value]]:
    """One AffineMap per list of expressions (over ``num_dims`` dims and the Scop's
    parameters as symbols), renumbered so that the maps take only the symbols some map uses;
    returns the maps and those symbols' Values (in Scop order)."""
    used = sorted({j for es in exprs_lists for e in es for j in e.used_symbols()})
    values = [v for _, v in scop.params.values()]
    repl = [AffineExpr.constant(0)] * len(values)
    for new, j in enumerate(used):
        repl[j] = AffineExpr.symbol(new)
    dims = [AffineExpr.dim(k) for k in range(num_dims)]
    maps = [AffineMap(num_dims, len(used), tuple(e.replace(dims, repl) for e in es)) for es in exprs_lists]
    return maps, [values[j] for j in used]


def fix_params(obj, scop: Scop, symbol_values: dict[Value, int] | None):
    """``obj`` (an isl set or map) with the Scop parameters in ``symbol_values`` fixed and
    projected out; None when it still involves a parameter without a value."""
    values = symbol_values or {}
    dt = isl.dim_type
    for pname, v in scop.params.values():
        pos = obj.find_dim_by_name(dt.param, pname)
        if pos < 0:
            continue
        if v in values:
            obj = obj.fix_val(dt.param, pos, int_val(obj.get_ctx(), int(values[v])))
        elif obj.involves_dims(dt.param, pos, 1):
            return None
    return obj.project_out(dt.param, 0, obj.dim(dt.param))


def val_to_int(v: isl.Val) -> int:
    """The integer ``v`` as a Python int. Raises :class:`BudgetExceeded` when isl cannot write
    its digits because the operation quota of :func:`isl_budget` ran out -- isl then hands back
    values it stopped computing early (``count_val`` returns a partial count without an error),
    so nothing computed since may be trusted -- and UnsupportedError for a value that is not an
    integer (rational, infinite, NaN)."""
    if not v.is_int():
        raise UnsupportedError("isl returned a value that is not an integer")
    text = v.to_str()
    if text is None:
        raise BudgetExceeded("isl's operation budget ran out (a value it returned is incomplete)")
    return int(text)


def count_points(s: isl.Set, budget: int = 200_000) -> int | None:
    """The exact number of integer points of a parameter-free set; None when unbounded or too
    large to count. A set that is the product of its first ``k`` dimensions and the rest is
    counted as the product of the two counts (recursively: batch and head dimensions of a
    triangular domain cost nothing); a set with no such split is enumerated by isl when the
    bounding box of all but its last dimension has at most ``budget`` points. Raises
    :class:`BudgetExceeded` when an enclosing :func:`isl_budget` runs out while counting."""
    if s.is_empty():
        return 0
    if not s.is_bounded():
        return None
    s = s.reset_tuple_id() if s.get_tuple_name() is not None else s
    return _count_bounded(s.flatten(), budget)


def _count_bounded(s: isl.Set, budget: int) -> int | None:
    n = s.dim(isl.dim_type.set)
    if n <= 1:
        return val_to_int(s.count_val())
    for k in range(1, n):
        head = s.project_out(isl.dim_type.set, k, n - k)
        tail = s.project_out(isl.dim_type.set, 0, k)
        if head.flat_product(tail).is_equal(s):
            a = _count_bounded(head, budget)
            b = None if a is None else _count_bounded(tail, budget)
            return None if b is None else a * b
    outer = 1
    for k in range(n - 1):
        outer *= val_to_int(s.project_out(isl.dim_type.set, k + 1, n - k - 1)
                            .project_out(isl.dim_type.set, 0, k).count_val())
        if outer > budget:
            return None
    return val_to_int(s.count_val())
