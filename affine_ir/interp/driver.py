"""Compile (translate + ``exec``) modules, cache them by their text, run functions, and turn
failures in generated code into located :class:`InterpretError`\\ s."""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..dialects.builtin import ModuleOp
from ..dialects.func import FuncOp
from ..errors import InterpretError
from ..types import Type
from . import gpu as G
from . import hopper as H
from . import memory as M
from . import mma as W
from . import semantics as S
from .translate import ModuleTranslator, OpInfo

CACHE_SIZE = 256
_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()
_counter = itertools.count()


@dataclass(frozen=True)
class Signature:
    """A function's name, argument names and types, and result types (copied from the IR)."""

    name: str
    arg_names: tuple[str, ...]
    arg_types: tuple[Type, ...]
    result_types: tuple[Type, ...]


class CompiledModule:
    """The Python translation of a module: one callable per ``func.func``."""

    def __init__(self, funcs: list[FuncOp]):
        translator = ModuleTranslator(funcs)
        self.source, infos = translator.translate()
        namespace = {
            "__builtins__": __builtins__, "math": math, "_S": S, "_M": M, "_G": G, "_W": W, "_H": H, "_INF": math.inf,
            "_NAN": math.nan,
            "_scratch": S.new_scratch32, "_OOB": S.OutOfBounds, "_Unsupported": S.Unsupported,
            "__affine_ir_lines__": infos,
        }
        namespace.update(translator.globals)
        self.filename = f"<affine_ir.interpret #{next(_counter)}>"
        try:
            code = compile(self.source, self.filename, "exec")
        except (SyntaxError, RecursionError) as e:  # e.g. more than 20 nested loops
            raise InterpretError(f"cannot translate the module to Python: {e}") from None
        exec(code, namespace)
        self.functions = {}
        self.signatures = {}
        for f in funcs:
            self.functions[f.sym_name] = namespace[translator.pynames[f.sym_name]]
            ft = f.function_type
            names = tuple(f"%{a.name_hint}" if a.name_hint else f"%arg{i}" for i, a in enumerate(f.args)) \
                if f.regions else tuple(f"%arg{i}" for i in range(len(ft.inputs)))
            self.signatures[f.sym_name] = Signature(f.sym_name, names, tuple(ft.inputs), tuple(ft.results))

    def function(self, name: str) -> CompiledFunction:
        if name not in self.functions:
            raise InterpretError(f"no function @{name} in the module")
        return CompiledFunction(self, name)


class CompiledFunction:
    """A translated function: call it with numpy arrays and numbers like :func:`interpret`."""

    def __init__(self, module: CompiledModule, name: str):
        self.module = module
        self.name = name
        self.signature = module.signatures[name]
        self._fn = module.functions[name]

    @property
    def source(self) -> str:
        """The generated Python source of the whole module (for debugging)."""
        return self.module.source

    def __call__(self, *args):
        sig = self.signature
        if len(args) != len(sig.arg_types):
            types = ", ".join(map(str, sig.arg_types))
            raise InterpretError(f"@{sig.name} takes {len(sig.arg_types)} arguments ({types}), got {len(args)}")
        values = [M.convert_arg(a, t, k, n) for k, (a, t, n) in enumerate(zip(args, sig.arg_types, sig.arg_names))]
        M.check_copies_do_not_alias(values, list(sig.arg_names))
        try:
            out = self._fn(*values)
        except InterpretError:
            raise
        except S.Trap as e:
            raise translate_error(e) from None
        except (ValueError, TypeError) as e:
            err = translate_error(e)
            if "released memoryview" in str(e) or "read-only" in str(e):
                raise err from None
            raise err from e
        except Exception as e:
            raise translate_error(e) from e
        finally:
            M.write_back(values)
        results = tuple(M.convert_result(v, t) for v, t in zip(out, sig.result_types))
        if not results:
            return None
        return results[0] if len(results) == 1 else results

    def __repr__(self) -> str:
        return f"<CompiledFunction @{self.name}>"


def _failing_op(exc: BaseException) -> OpInfo | None:
    """The op of the innermost generated line in the traceback."""
    info = None
    tb = exc.__traceback__
    while tb is not None:
        lines = tb.tb_frame.f_globals.get("__affine_ir_lines__")
        if lines is not None and 0 < tb.tb_lineno <= len(lines):
            info = lines[tb.tb_lineno - 1] or info
        tb = tb.tb_next
    return info


def translate_error(exc: Exception) -> InterpretError:
    """An InterpretError naming the op (and location) where generated code failed."""
    info = _failing_op(exc)
    desc = info.desc if info is not None else "interpreter"
    loc = info.location if info is not None else None
    if isinstance(exc, S.Unsupported):
        msg = exc.message
    elif isinstance(exc, S.OutOfBounds):
        mtype = info.memref_type if info is not None else "the memref"
        what = f"vector of shape {exc.extent} at index {exc.index}" if exc.extent else f"index {exc.index}"
        dynamic = "?" in mtype
        msg = f"{desc}: {what} is out of bounds for {mtype}" + (f" of shape {exc.shape}" if dynamic else "")
    elif isinstance(exc, S.Trap):
        msg = f"{desc}: {exc.message}"
    elif isinstance(exc, ValueError) and "released memoryview" in str(exc):
        msg = f"{desc}: access to a deallocated buffer"
    elif isinstance(exc, TypeError) and "read-only" in str(exc):
        msg = f"{desc}: cannot write into a read-only array"
    elif isinstance(exc, RecursionError):
        msg = f"{desc}: call stack too deep (recursion)"
    else:
        msg = f"{desc}: {type(exc).__name__}: {exc}"
    return InterpretError(msg, loc)


# ----------------------------------------------------------------------------------------
# Entry points
# ----------------------------------------------------------------------------------------


def _module_of(op) -> ModuleOp | None:
    while op is not None and not isinstance(op, ModuleOp):
        op = op.parent_op
    return op


def _cache_key(root) -> tuple:
    return str(root), tuple(op.location for op in root.walk())


def compile_module(root) -> CompiledModule:
    """The (cached) translation of a module, or of a lone function. The cache is keyed by
    the printed text and the op locations, so a module changed since is translated anew."""
    key = _cache_key(root)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    funcs = root.functions if isinstance(root, ModuleOp) else [root]
    compiled = CompiledModule(funcs)
    with _cache_lock:
        _cache[key] = compiled
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def _entry(root, funcs: list[FuncOp], fn: str | None) -> str:
    if fn is not None:
        if not any(f.sym_name == fn for f in funcs):
            names = ", ".join("@" + f.sym_name for f in funcs) or "none"
            raise InterpretError(f"no function @{fn} in the module (functions: {names})")
        return fn
    defined = [f for f in funcs if not f.is_declaration]
    if len(defined) == 1:
        return defined[0].sym_name
    called = {op.callee for f in defined for op in f.walk() if op.name == "func.call"}
    roots = [f for f in defined if f.sym_name not in called]
    if len(roots) == 1:
        return roots[0].sym_name
    if not defined:
        raise InterpretError("the module has no function with a body to interpret")
    names = ", ".join("@" + f.sym_name for f in (roots or defined))
    raise InterpretError(f"the module has several entry functions ({names}); choose one with fn=...")


def compile_function(module_or_func, fn: str | None = None) -> CompiledFunction:
    """Translate once; the returned callable runs the function like :func:`interpret`.

    The callable keeps the semantics of the IR as it was when compiled (later changes to
    the IR are not seen; call again to pick them up).
    """
    if isinstance(module_or_func, FuncOp):
        if fn is not None and fn != module_or_func.sym_name:
            raise InterpretError(f"fn={fn!r} does not name the given function @{module_or_func.sym_name}")
        module = _module_of(module_or_func)
        root = module if module is not None else module_or_func
        return compile_module(root).function(module_or_func.sym_name)
    if not isinstance(module_or_func, ModuleOp):
        raise InterpretError(f"expected a module or a func.func op, got {type(module_or_func).__name__}")
    name = _entry(module_or_func, module_or_func.functions, fn)
    return compile_module(module_or_func).function(name)


def interpret(module_or_func, *args, fn: str | None = None):
    """Run function ``fn`` of a module (default: its only function, or the only one no other
    function calls) on ``args``; see :mod:`affine_ir.interpreter` for the semantics."""
    return compile_function(module_or_func, fn)(*args)
