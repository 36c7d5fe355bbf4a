"""Minimizing a failing fuzzing case (:func:`minimize`): the pipeline, the program's bytes, then
the program's IR, each step kept only when the case still fails the same way."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from ..affine_expr import fits_index
from ..affine_map import AffineMap
from ..dialects.affine import AffineForOp
from .checks import kernel_function
from .fuzz_cases import Case, Outcome, build_case, bytes_read, tape_bytes

__all__ = ["ir_candidates", "minimize"]


def minimize(case: Case, outcome: Outcome, check: Callable[[Case], Outcome], seconds: float = 120.0) -> tuple:
    """A smaller case with the same :attr:`Outcome.signature`: ``(case, outcome)``.

    Steps, each change kept when ``check`` gives the same signature: drop passes of the pipeline
    and each pass's options; drop the aliasing; zero the bytes the generator does not read, then
    chunks of the program's bytes (halving the chunk down to 8 bytes; a zero byte is the
    generator's simplest choice: fewer nests, shallower loops, constant bounds, unit strides);
    then, on the program's text, erase ops whose results are unused (outer ones first) and cut
    constant loops to one iteration (:func:`ir_candidates`); then the pipeline again. Stops
    after ``seconds`` (checks in flight finish)."""
    deadline = time.monotonic() + seconds
    state = {"case": case, "outcome": outcome}

    def attempt(candidate: Case) -> bool:
        if time.monotonic() > deadline or candidate == state["case"]:
            return False
        got = check(candidate)
        if got.signature != outcome.signature:
            return False
        state["case"], state["outcome"] = candidate, got
        return True

    def current() -> Case:
        return state["case"]

    _shrink_pipeline(current, attempt)
    if current().alias:
        attempt(replace(current(), alias=False))
    if not current().program:
        _shrink_bytes(current, attempt, deadline)
    _shrink_ir(current, attempt, deadline)
    _shrink_pipeline(current, attempt)
    return state["case"], state["outcome"]


def _shrink_pipeline(current: Callable[[], Case], attempt: Callable[[Case], bool]) -> None:
    if current().pipeline is None:
        return
    k = 0
    while k < len(current().pipeline) and len(current().pipeline) > 1:
        p = current().pipeline
        if not attempt(replace(current(), pipeline=p[:k] + p[k + 1:])):
            k += 1
    for k, entry in enumerate(current().pipeline):
        if "{" in entry:
            p = current().pipeline
            attempt(replace(current(), pipeline=p[:k] + (entry.split("{")[0],) + p[k + 1:]))


def _shrink_bytes(current: Callable[[], Case], attempt: Callable[[Case], bool], deadline: float) -> None:
    size = tape_bytes(current().generator, current().options)
    data = current().data
    used = bytes_read(current())
    if used < size and any(data[used:size]):
        attempt(replace(current(), data=data[:used] + bytes(size - used) + data[size:]))
    chunk = max(8, used // 2)
    while chunk >= 8 and time.monotonic() < deadline:
        for start in range(0, used, chunk):
            data = current().data
            if time.monotonic() > deadline:
                break
            if any(data[start:start + chunk]):
                n = min(chunk, used - start)
                attempt(replace(current(), data=data[:start] + bytes(n) + data[start + n:]))
        chunk //= 2


def _shrink_ir(current: Callable[[], Case], attempt: Callable[[Case], bool], deadline: float) -> None:
    """Greedy: the first candidate that still fails replaces the program, and the search restarts there."""
    try:
        text = current().program or str(build_case(current())[0])
    except Exception:
        return
    start = 0
    while time.monotonic() < deadline:
        for k, candidate in ir_candidates(text, start):
            if time.monotonic() > deadline:
                return
            if attempt(replace(current(), program=candidate)):
                text, start = candidate, k
                break
        else:
            return


def ir_candidates(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(k, smaller program text)`` for the ops of the kernel function in pre-order from the
    ``start``-th: the op erased (when no result is used and it is no terminator), a loop of
    one iteration replaced by its body, and a loop with constant bounds cut to one iteration.
    Every candidate verifies and keeps its accesses a subset of the original's (in bounds)."""
    import affine_ir as air

    try:
        count = sum(1 for _ in kernel_function(air.parse(text)).walk())
    except air.IRError:  # nothing to shrink on text that does not parse
        return
    for k in range(max(1, start), count):
        for change in (_erase, _inline_one_iteration, _one_iteration):
            module = air.parse(text)
            op = list(kernel_function(module).walk())[k]
            if change(op):
                try:
                    air.verify(module)
                except air.IRError:
                    continue
                yield k, str(module)


def _erase(op) -> bool:
    if op.is_terminator or any(r.has_uses for r in op.results):
        return False
    op.erase()
    return True


def _inline_one_iteration(op) -> bool:
    """A loop of one iteration without results replaced by its body (the IV by a constant)."""
    if not isinstance(op, AffineForOp) or op.constant_trip_count != 1 or op.results:
        return False
    from ..builder import Builder

    b = Builder()
    with b.before(op):
        iv = b.constant(op.constant_bounds[0], "index")
    op.induction_var.replace_all_uses_with(iv)
    block = op.parent
    for inner in [c for c in op.body.ops if not c.is_terminator]:
        block.insert_before(op, inner.detach())
    op.erase()
    return True


def _one_iteration(op) -> bool:
    if not isinstance(op, AffineForOp) or (op.constant_trip_count or 0) <= 1:
        return False
    lb = op.constant_bounds[0]
    if not fits_index(lb + op.step):
        return False
    op.set_bounds(op.lower_bound_map, (), AffineMap.constant_map(lb + op.step), ())
    return True
