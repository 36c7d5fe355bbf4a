"""The lines of one kernel body, and the removal of unused declarations.

NVRTC warns about a local variable that is declared but never read (#177-D, #550-D). A value
whose uses were all folded into an expression (a constant in an index), a loaded value nobody
uses, a loop-carried variable whose result is dropped: each would warn. So every line records
the values it reads, and a line that declares (or assigns to) a value's variable is printed only
when some printed line reads that value -- a mark phase from the statements (stores, loops,
barriers), which keeps exactly the computations that reach memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir.core import Value


@dataclass(frozen=True)
class Line:
    indent: int
    text: str
    refs: frozenset[Value] = frozenset()
    defines: Value | None = None  # declares the variable of this value (dropped when it is not read)
    assigns: Value | None = None  # assigns to the variable of this value (dropped with its declaration)
    helpers: frozenset[str] = frozenset()  # the air_* helpers the line calls


def is_kept(ln: Line, live: set[Value]) -> bool:
    owner = ln.defines if ln.defines is not None else ln.assigns
    return owner is None or owner in live


def live_values(lines: list[Line]) -> set[Value]:
    """The values some kept line reads, starting from the statements."""
    owned: dict[Value, list[Line]] = {}
    work: list[Value] = []
    for ln in lines:
        owner = ln.defines if ln.defines is not None else ln.assigns
        if owner is None:
            work.extend(ln.refs)
        else:
            owned.setdefault(owner, []).append(ln)
    live: set[Value] = set()
    while work:
        v = work.pop()
        if v in live:
            continue
        live.add(v)
        for ln in owned.get(v, ()):
            work.extend(ln.refs)
    return live


def render(lines: list[Line], live: set[Value], base_indent: int = 1) -> list[str]:
    """The text of the kept lines (two spaces per level)."""
    return ["  " * (base_indent + ln.indent) + ln.text for ln in lines if is_kept(ln, live)]


def helpers_used(lines: list[Line], live: set[Value]) -> set[str]:
    """The helpers the kept lines call."""
    out: set[str] = set()
    for ln in lines:
        if is_kept(ln, live):
            out |= ln.helpers
    return out
