"""The shape of the code (docs/architecture.md): layers import in one direction, the transforms
root holds only infrastructure, no module takes another's private helpers, and what an op *is*
is asked of the op (traits, interfaces), not read off its name.

These are checks on the source text (with ``ast``), so they fail on the line that breaks the rule.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("affine_ir", "analysis", "transforms", "codegen", "runtime", "frontend")
#: What each layer may import (besides itself).
MAY_IMPORT = {"affine_ir": set(), "analysis": {"affine_ir"}, "transforms": {"affine_ir", "analysis"},
              "codegen": {"affine_ir", "analysis"}, "runtime": {"affine_ir", "analysis", "transforms", "codegen"},
              "frontend": {"affine_ir", "analysis", "transforms", "codegen", "runtime"}}
#: The fuzz driver (``python -m affine_ir.testing.fuzz``) runs programs through every layer; it
#: imports them inside its functions, so ``affine_ir`` itself still imports nothing above it.
LAZY_UPPER_IMPORTS_ALLOWED = {"affine_ir/testing/fuzz_cases.py"}
TRANSFORMS_ROOT = {"__init__", "errors", "loop_utils", "moved", "pass_base", "pass_manager", "pipeline", "pipelines",
                   "testing", "rewrite"}


def _sources(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(), str(path))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}:{node.col_offset + 1}"


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def test_layers_import_in_one_direction():
    bad = []
    for path, tree in _sources(*LAYERS):
        layer = path.relative_to(ROOT).parts[0]
        top_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            for module in _imported_modules(node):
                top = module.split(".")[0]
                if top not in LAYERS or top == layer or top in MAY_IMPORT[layer]:
                    continue
                lazy = id(node) not in top_level
                if lazy and str(path.relative_to(ROOT)) in LAZY_UPPER_IMPORTS_ALLOWED:
                    continue
                bad.append(f"{_where(path, node)}: {layer} imports {module}")
    assert not bad, "\n".join(bad)


def test_transforms_root_holds_only_infrastructure():
    root = {p.stem for p in (ROOT / "transforms").glob("*.py")}
    assert root <= TRANSFORMS_ROOT, f"pass modules at the root of transforms/: {sorted(root - TRANSFORMS_ROOT)}"
    import transforms
    from transforms.pass_base import PASS_MODULES

    for name, module in PASS_MODULES.items():
        assert module.split(".")[0] in transforms.STAGES, f"{name} is defined outside a stage folder: {module}"


def private_imports(*packages: str) -> list[str]:
    """``from m import _name`` anywhere in ``packages`` (a module taking another's private helper)."""
    out = []
    for path, tree in _sources(*packages):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if names:
                    out.append(f"{_where(path, node)}: imports {', '.join(names)}")
    return out


def test_no_module_imports_private_helpers_of_another():
    bad = private_imports(*LAYERS)
    assert not bad, "\n".join(bad)


# -- op kinds are asked of the op, not read off its name ---------------------------------------------------------------
OP_NAME = re.compile(r"^(affine|arith|memref|func|gpu|vector|math|scf|nvgpu|builtin|cf)\.([a-z_]+)?$")
#: Outside the dialect definitions (affine_ir/dialects, the interpreter's per-op semantics).
CHECKED = ("analysis", "transforms", "codegen", "runtime")
MAX_OP_NAME_TESTS = 15
EXPLAINED = "# op-name:"


def _is_op_name(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(OP_NAME.match(node.value))


def _names_ops(node) -> bool:
    """A literal collection holding an op name (a tuple/set/list, dict keys, frozenset(...))."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_op_name(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(k is not None and _is_op_name(k) for k in node.keys)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return bool(node.args) and _names_ops(node.args[0])
    if isinstance(node, (ast.DictComp, ast.SetComp, ast.ListComp, ast.GeneratorExp)):  # {f"arith.{k}": ...}
        key = node.key if isinstance(node, ast.DictComp) else node.elt
        return _is_op_name(key) or (isinstance(key, ast.JoinedStr) and bool(key.values) and
                                    _is_op_name_prefix(key.values[0]))
    return False


def _is_op_name_prefix(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(OP_NAME.match(node.value))


def _is_op_class(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.endswith("Op") and name[:1].isupper()


def _op_class_tuple(node) -> bool:
    return isinstance(node, ast.Tuple) and sum(map(_is_op_class, node.elts)) >= 2


def op_name_tests(tree: ast.AST) -> set[int]:
    """Lines comparing op names with literals (``op.name == "affine.for"``, ``in ("arith.addf", ...)``,
    ``.startswith("memref.")``), tables of op names, and tuples of op classes (``isinstance(op, (A, B))``)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(_is_op_name(p) or _names_ops(p) for p in (node.left, *node.comparators)):
                lines.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
            if node.args and (_is_op_name(node.args[0]) or _names_ops(node.args[0])):
                lines.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            if len(node.args) == 2 and _op_class_tuple(node.args[1]):
                lines.add(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if _names_ops(node.value) or _op_class_tuple(node.value):
                lines.add(node.lineno)
    return lines


def op_name_test_sites() -> list[tuple[str, bool]]:
    """Every op-name test outside the dialects: (``file:line: text``, explained by an ``# op-name:`` comment
    on the line or the line above)."""
    out = []
    for path, tree in _sources(*CHECKED):
        text = path.read_text().splitlines()
        for line in sorted(op_name_tests(tree)):
            explained = EXPLAINED in text[line - 1] or (line > 1 and EXPLAINED in text[line - 2])
            out.append((f"{path.relative_to(ROOT)}:{line}: {text[line - 1].strip()}", explained))
    return out


def test_op_kinds_are_asked_of_the_op_not_its_name():
    sites = op_name_test_sites()
    unexplained = [s for s, ok in sites if not ok]
    assert not unexplained, "op-name tests without an '# op-name:' reason:\n" + "\n".join(unexplained)
    assert len(sites) <= MAX_OP_NAME_TESTS, "\n".join(s for s, _ in sites)


@pytest.mark.parametrize("source, count", [
    ('if op.name == "affine.for": pass', 1),
    ('x = op.name in ("arith.addf", "arith.mulf")', 1),
    ('ok = op.name.startswith(("memref.", "gpu."))', 1),
    ('TABLE = frozenset({"affine.load"})', 1),
    ('LOOPS = (AffineForOp, AffineParallelOp)', 1),
    ('y = isinstance(op, (AffineLoadOp, AffineStoreOp))', 1),
    ('if op.has_trait(Pure) and isinstance(op, AffineForOp): pass', 0),
    ('if t.name == "f64": pass', 0),
    ('KINDS = {f"arith.{k}": k for k in ("addf", "mulf")}', 1),
])
def test_the_op_name_audit_finds_what_it_should(source, count):
    assert len(op_name_tests(ast.parse(source))) == count


if __name__ == "__main__":  # python tests/test_architecture.py: list what the audits find
    for site, ok in op_name_test_sites():
        print(site if ok else f"{site}    <- no '# op-name:' reason")
    print(f"{len(op_name_test_sites())} op-name tests (at most {MAX_OP_NAME_TESTS})")
    print("\n".join(private_imports(*LAYERS)))
