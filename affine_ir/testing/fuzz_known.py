"""Known bugs (being fixed elsewhere) that fuzzing findings are matched against, by what the
minimized case and its outcome show: the mode, the finding's kind, the passes left in the
shrunk pipeline, the error type and the innermost project frame. A match is a strong hint, not
a proof: a reproducer's README says which bug it matched."""

from __future__ import annotations

from collections.abc import Callable

from .fuzz_cases import Case, Outcome

__all__ = ["KNOWN_BUGS", "known_bug"]


def _passes(case: Case) -> set[str]:
    return {p.split("{")[0] for p in case.pipeline or ()}


def _uses(case: Case, *names: str) -> bool:
    return case.pipeline is None or bool(_passes(case) & set(names))


#: (description, predicate on the minimized case and outcome), first match wins.
KNOWN_BUGS: list[tuple[str, Callable[[Case, Outcome], bool]]] = [
    ("CPU aliasing: passes assume distinct memref arguments (runtime engineer)",
     lambda c, o: c.mode == "cpu" and c.alias and o.kind == "mismatch"),
    ("IV + step overflow in CPU loops (runtime engineer): a hang, or a wrong trip count",
     lambda c, o: c.mode == "cpu" and bool(c.options.get("allow_limits"))
     and (o.kind == "hang" or (o.kind == "mismatch" and o.where == "codegen/runtime"))),
    ("interpreter index overflow message (ir engineer)",
     lambda c, o: "memoryview" in o.message),
    ("interpreter affine.parallel vector reductions (ir engineer)",
     lambda c, o: o.kind == "mismatch" and "affine.parallel" in o.message and "vector" in o.message),
    ("slice analysis point count TypeError (fusion engineer)",
     lambda c, o: o.kind == "internal" and o.error == "TypeError" and "slice" in o.where),
    ("fusion hang on tiled symbolic nests (fusion engineer)",
     lambda c, o: o.kind == "hang" and _uses(c, "affine-loop-fusion")),
    ("fusion private buffer for a function argument (fusion engineer)",
     lambda c, o: o.kind == "mismatch" and o.where == "after affine-loop-fusion"),
    ("scalrep dominance (passes engineer)",
     lambda c, o: o.kind == "internal" and o.error == "TransformError" and "affine-scalrep: the pass produced IR "
     "that does not verify" in o.message and "dominate" in o.message),
    ("scalrep cubic time / unroll O(n^2) (passes engineer)",
     lambda c, o: o.kind == "hang" and _uses(c, "affine-scalrep", "affine-loop-unroll")),
    ("canonicalize drops a max term on a single-iteration loop (passes engineer)",
     lambda c, o: o.kind == "mismatch" and o.where in ("after canonicalize", "after affine-loop-normalize")
     and bool(c.options.get("allow_wide_minmax"))),
]


def known_bug(case: Case, outcome: Outcome) -> str:
    """The description of the known bug ``(case, outcome)`` matches, or ``""`` (a new finding)."""
    for description, matches in KNOWN_BUGS:
        if matches(case, outcome):
            return description
    return ""
