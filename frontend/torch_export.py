"""``torch.export`` programs through the import (issue 21): compile an ``ExportedProgram`` ahead of
time, without ``torch.compile``.

:func:`compile_exported` runs the program's decompositions to ATen (PyTorch's default table less
:data:`KEPT`, and :mod:`.torch_decompose`'s), passes its graph to :func:`frontend.torch_backend.compile_fx` (the
same import, fallback and caches as the ``torch.compile`` backend), and returns a callable taking
the program's user inputs: parameters, buffers and constants are passed from the program's state
on every call (no copies), and the user outputs are returned. A program that mutates a buffer or
an input (training-mode batch norm) is refused: the compiled function writes only its outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument

from .torch_backend import compile_fx
from .torch_decompose import DECOMPOSITIONS

__all__ = ["KEPT", "ExportedRunner", "compile_exported"]

aten = torch.ops.aten
#: Ops PyTorch's default table decomposes that the import takes whole (attention: to its nests,
#: instead of a mask built from ``arange`` and logical ops the import does not take).
KEPT = (aten.scaled_dot_product_attention.default, aten._scaled_dot_product_flash_attention_for_cpu.default)


class ExportedRunner:
    """The compiled program: ``runner(*user_inputs)`` returns the user outputs (one tensor, or a
    tuple when the program has several). ``graph`` is the ATen graph that was compiled."""

    def __init__(self, program: ExportedProgram, run: Callable, state: list[torch.Tensor | None], single: bool):
        self.program, self.graph = program, program.graph_module
        self._run, self._state, self._single = run, state, single
        self._users = sum(s is None for s in state)

    def __call__(self, *inputs: torch.Tensor):
        if len(inputs) != self._users:
            raise TypeError(f"the exported program takes {self._users} input(s), got {len(inputs)}")
        given = iter(inputs)
        outs = self._run(*[next(given) if s is None else s for s in self._state])
        return outs[0] if self._single else tuple(outs)


def compile_exported(program: ExportedProgram, target: str = "auto") -> ExportedRunner:
    """``program`` decomposed to ATen and compiled for ``target`` ("auto": the GPU when one is
    usable). ValueError for a program that mutates buffers or inputs, or has non-tensor inputs."""
    table = torch.export.default_decompositions()
    for op in KEPT:
        table.pop(op, None)
    program = program.run_decompositions({**table, **DECOMPOSITIONS})
    sig = program.graph_signature
    mutated = [o for o in sig.output_specs if o.kind is not OutputKind.USER_OUTPUT]
    if mutated:
        raise ValueError(f"the program mutates {', '.join(str(o.target) for o in mutated)} (inference programs "
                         "only: export the model in eval mode)")
    state: list[torch.Tensor | None] = []
    for spec in sig.input_specs:
        if spec.kind is InputKind.USER_INPUT:
            if not isinstance(spec.arg, TensorArgument):
                raise ValueError(f"input {getattr(spec.arg, 'name', spec.arg)!r}: a non-tensor user input (export "
                                 "specialized its value; tensors only)")
            state.append(None)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            state.append(program.state_dict[spec.target] if spec.target in program.state_dict
                         else program.constants[spec.target])
        elif spec.kind is InputKind.CONSTANT_TENSOR:
            state.append(program.constants[spec.target])
        else:
            raise ValueError(f"input {spec.arg.name}: a {spec.kind.name.lower()} input (tensors only)")
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
    examples = [t if t is not None else n.meta["val"] for n, t in zip(placeholders, state)]
    run = compile_fx(program.graph_module, examples, target)
    return ExportedRunner(program, run, state, len(sig.output_specs) == 1)

