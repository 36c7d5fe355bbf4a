"""Running programs for differential tests, and describing what a program contains."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

from ..core import Operation
from ..dialects import affine as affine_d
from ..dialects.builtin import ModuleOp
from ..dialects.func import FuncOp
from ..errors import IRError
from ..types import index

__all__ = ["assert_equivalent", "copy_arguments", "program_features", "run"]

_ACCESS = (affine_d.AffineLoadOp, affine_d.AffineStoreOp, affine_d.AffineVectorLoadOp, affine_d.AffineVectorStoreOp)


def _as_module(m: ModuleOp | str) -> ModuleOp:
    if isinstance(m, str):
        from .. import parse

        return parse(m)
    return m


def kernel_function(module: ModuleOp, fn: str | None = None) -> FuncOp:
    """The function ``fn`` of ``module``, or its first function with a body."""
    funcs = [f for f in module.functions if not f.is_declaration]
    if fn is not None:
        f = module.lookup(fn)
        if f is None:
            raise ValueError(f"no function @{fn} in the module")
        return f
    if not funcs:
        raise ValueError("the module has no function with a body")
    return funcs[0]


def run(module: ModuleOp | str, args: Sequence, fn: str | None = None) -> list:
    """Interpret ``module`` on copies of ``args``; the arrays after the run, then the returned values.

    ``args`` are left untouched, so one input list serves several runs.  ``module`` may be
    MLIR text.  One array passed at two positions (aliasing arguments) is one copy at both.
    """
    from ..interpreter import interpret

    module = _as_module(module)
    copies = copy_arguments(args)
    returned = interpret(module, *copies, fn=fn)
    if returned is None:
        returned = []
    elif not isinstance(returned, (list, tuple)):
        returned = [returned]
    return [a for a in copies if isinstance(a, np.ndarray)] + list(returned)


def copy_arguments(args: Sequence) -> list:
    """``args`` with every numpy array copied; an array passed at several positions is one copy
    at all of them, so aliasing arguments stay aliased."""
    copies: dict[int, np.ndarray] = {}
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            a = copies.setdefault(id(a), np.array(a, copy=True))
        out.append(a)
    return out


def assert_same_bits_in_both_thread_orders(want: Sequence, module: ModuleOp | str, args: Sequence,
                                           context: object = "") -> None:
    """:func:`run` ``module`` (mapped IR with ``gpu.launch``) twice, its threads in their order
    and then reversed (:func:`affine_ir.interp.gpu.reversed_schedule`, which exposes races), and
    assert both give exactly the bits of ``want`` (what the original program gave). A module with
    TMA copies runs a third time with them completing when issued
    (:func:`affine_ir.interp.hopper.eager_copies`: a stage handed back too early then shows); every module
    runs once more with the threads of synchronizing launches taking turns at every shared access
    (:func:`affine_ir.interp.gpu.interleaved_schedule`: a warp or warpgroup overwriting shared memory another
    still reads then shows). A module with thread-block clusters runs once more with copies completing when issued
    and one block of each cluster running ahead of the others (reversed: a block's loads overwriting a stage
    another block still reads then show)."""
    from ..interp.gpu import interleaved_schedule, reversed_schedule
    from ..interp.hopper import eager_copies

    orders = {"forward": contextlib.nullcontext, "reversed": reversed_schedule}
    if isinstance(module, str):
        has_tma, has_clusters = "nvgpu.tma.async" in module, "gpu.launch clusters(" in module
    else:
        has_tma = any(op.name.startswith("nvgpu.tma.async") for op in module.walk())
        has_clusters = any(op.name == "gpu.launch" and op.cluster_size for op in module.walk())
    if has_tma:
        orders["eager copies"] = eager_copies
    if has_clusters:
        orders["eager copies, a block of each cluster ahead"] = _eager_and_reversed
    orders["interleaved"] = interleaved_schedule
    for order, schedule in orders.items():
        with schedule():
            got = run(module, args)
        for w, g in zip(want, got):
            w, g = np.asarray(w), np.asarray(g)
            assert w.dtype == g.dtype and np.array_equal(w.reshape(-1).view(np.uint8), g.reshape(-1).view(np.uint8)), (
                f"{context}: {order} thread order differs")


@contextlib.contextmanager
def _eager_and_reversed():
    from ..interp.gpu import reversed_schedule
    from ..interp.hopper import eager_copies

    with eager_copies(), reversed_schedule():
        yield


def _output_names(module: ModuleOp, args: Sequence, fn: str | None) -> list[str]:
    try:
        f = kernel_function(module, fn)
        hints = [a.name_hint for a in f.args]
    except ValueError:
        hints = []
    names = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray):
            hint = hints[k] if k < len(hints) and hints[k] else "?"
            names.append(f"argument #{k} (%{hint})")
    return names


def _describe_inputs(args: Sequence) -> str:
    parts = []
    for k, a in enumerate(args):
        if isinstance(a, np.ndarray):
            parts.append(f"#{k}: array {a.dtype}{list(a.shape)}")
        else:
            parts.append(f"#{k}: {a!r}")
    return ", ".join(parts)


def _first_difference(want: np.ndarray, got: np.ndarray) -> str | None:
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"shape/dtype differ: before {want.dtype}{list(want.shape)}, after {got.dtype}{list(got.shape)}"
    same = want == got
    if want.dtype.kind in "fc":
        same |= np.isnan(want) & np.isnan(got)
    if same.all():
        return None
    bad = np.argwhere(~same)
    at = tuple(int(i) for i in bad[0])
    return (f"{len(bad)} of {want.size} elements differ; first at {list(at)}: "
            f"before {want[at].item()!r}, after {got[at].item()!r}")


def assert_equivalent(before: ModuleOp | str, after: ModuleOp | str, args: Sequence, fn: str | None = None) -> None:
    """Interpret both programs on copies of ``args``; raise AssertionError unless every output is exactly equal.

    Outputs are the arrays after the run (memref arguments) and the returned values. The
    message names the first differing output and index, both values, the inputs, and both
    programs' text.  An error raised while interpreting ``after`` is reported the same way.
    """
    before, after = _as_module(before), _as_module(after)
    want = run(before, args, fn)
    texts = f"\ninputs: {_describe_inputs(args)}\n--- before ---\n{before}\n--- after ---\n{after}"
    try:
        got = run(after, args, fn)
    except IRError as e:
        raise AssertionError(f"the second program fails where the first runs: {e}{texts}") from e
    if len(want) != len(got):
        raise AssertionError(f"{len(want)} outputs before, {len(got)} after{texts}")
    names = _output_names(before, args, fn)
    names += [f"returned value #{k}" for k in range(len(want) - len(names))]
    for name, w, g in zip(names, want, got):
        diff = _first_difference(np.asarray(w), np.asarray(g))
        if diff is not None:
            raise AssertionError(f"{name}: {diff}{texts}")


# ----- features -------------------------------------------------------------------------------------
def program_features(module: ModuleOp) -> frozenset[str]:
    """Names of the constructs ``module`` contains, for coverage checks and ``assume``.

    ``depth<n>`` (deepest loop nest), ``imperfect``, ``max_bound``, ``min_bound``,
    ``symbol_bound``, ``triangular`` (a bound uses an outer IV), ``step``, ``empty_range``
    (a constant loop with no iteration), ``symbols``, ``if``, ``if_else``, ``if_result``,
    ``iter_args``, ``floordiv``, ``mod``, ``multi_iv_subscript``, ``stride``
    (coefficient not 0/1), ``negative_stride``, ``shared_memref`` (accessed by two top-level
    ops), ``update`` (load and store of one element in a block), ``cast``, ``select``,
    ``apply``, and the element types of the memref arguments (``f32``, ``i32``...).
    """
    feats: set[str] = set()
    for f in module.functions:
        if f.is_declaration:
            continue
        for a in f.args:
            if a.type == index:
                feats.add("symbols")
            elif hasattr(a.type, "element_type"):
                feats.add(str(a.type.element_type))
        users: dict[int, set[int]] = {}
        for top in f.body.ops:
            for op in top.walk():
                if isinstance(op, _ACCESS):
                    users.setdefault(id(op.memref), set()).add(id(top))
        if any(len(u) > 1 for u in users.values()):
            feats.add("shared_memref")
        feats.add(f"depth{_depth(f)}")
        for op in f.walk():
            _op_features(op, feats)
    return frozenset(feats)


def _depth(op: Operation) -> int:
    inner = max((_depth(c) for r in op.regions for b in r.blocks for c in b.ops), default=0)
    return inner + (op.name == "affine.for")


def _op_features(op: Operation, feats: set[str]) -> None:
    if isinstance(op, affine_d.AffineForOp):
        lb, ub = op.lower_bound_map, op.upper_bound_map
        feats.update(n for n, c in (("max_bound", lb.num_results > 1), ("min_bound", ub.num_results > 1),
                                    ("symbol_bound", lb.num_symbols + ub.num_symbols > 0),
                                    ("triangular", lb.num_dims + ub.num_dims > 0), ("step", op.step > 1),
                                    ("iter_args", bool(op.results)),
                                    ("empty_range", op.constant_trip_count == 0)) if c)
        body = [c for c in op.body.ops if not c.is_terminator]
        if any(isinstance(c, affine_d.AffineForOp) for c in body) and \
                any(not isinstance(c, affine_d.AffineForOp) for c in body):
            feats.add("imperfect")
        seen = set()
        for c in body:
            if isinstance(c, _ACCESS):
                key = (id(c.memref), c.map, tuple(id(v) for v in c.indices))
                if isinstance(c, affine_d.AffineStoreOp) and ("load", key) in seen:
                    feats.add("update")
                seen.add(("load" if isinstance(c, affine_d.AffineLoadOp) else "store", key))
    elif isinstance(op, affine_d.AffineIfOp):
        feats.add("if")
        if op.else_block is not None:
            feats.add("if_else")
        if op.results:
            feats.add("if_result")
    elif isinstance(op, _ACCESS):
        for e in op.map.results:
            _expr_features(e, op.map.num_dims, feats)
    elif op.name in ("arith.sitofp", "arith.fptosi", "arith.index_cast"):
        feats.add("cast")
    elif op.name == "arith.select":
        feats.add("select")
    elif op.name == "affine.apply":
        feats.add("apply")


def _expr_features(e, num_dims: int, feats: set[str]) -> None:
    for t in e.div_terms():
        feats.add("mod" if t.kind == "mod" else "floordiv")
    if len(e.used_dims()) > 1:
        feats.add("multi_iv_subscript")
    for d in range(num_dims):
        c = e.coefficient_of_dim(d)
        if c not in (0, 1):
            feats.add("stride")
        if c < 0:
            feats.add("negative_stride")
