"""Old module paths of the passes (before they moved into stage folders), still importable.

Until issue 16 every pass module sat in ``transforms/`` itself (``transforms.tile``,
``transforms.fuse``, ...). Scripts that import those paths keep working: importing an old path
gives the module at its new place (the same module object) and a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED", "install"]

#: Old module name (under ``transforms``) -> its place now.
MOVED: dict[str, str] = {
    "canonicalize": "cleanup.canonicalize", "canonicalize_fold": "cleanup.canonicalize_fold",
    "canonicalize_loops": "cleanup.canonicalize_loops", "canonicalize_maps": "cleanup.canonicalize_maps",
    "canonicalize_ranges": "cleanup.canonicalize_ranges", "check_bounds": "verify.check_bounds",
    "copy_generation": "memory.copy_generation", "copy_generation_nests": "memory.copy_generation_nests",
    "cse": "cleanup.cse", "dce": "cleanup.dce", "fuse": "fusion.fuse", "fuse_common": "fusion.fuse_common",
    "fuse_private": "fusion.fuse_private", "fuse_sibling": "fusion.fuse_sibling", "fuse_slice": "fusion.fuse_slice",
    "gpu_map": "gpu.gpu_map", "gpu_map_nest": "gpu.gpu_map_nest", "gpu_reduce": "gpu.gpu_reduce",
    "gpu_reduce_plan": "gpu.gpu_reduce_plan", "licm": "loops.licm", "loop_promotion": "loop_utils",
    "normalize": "loops.normalize", "parallelize": "loops.parallelize", "permute": "loops.permute",
    "permute_bounds": "loops.permute_bounds", "permute_choice": "loops.permute_choice", "scalrep": "memory.scalrep",
    "schedule_cpu": "cpu.schedule_cpu", "schedule_gpu": "gpu.schedule_gpu",
    "schedule_gpu_plan": "gpu.schedule_gpu_plan", "tile": "loops.tile", "tile_bounds": "loops.tile_bounds",
    "tile_model": "loops.tile_model", "unroll": "loops.unroll", "unroll_jam": "loops.unroll_jam",
    "vectorize": "cpu.vectorize", "vectorize_plan": "cpu.vectorize_plan",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds transforms.<old> and loads it as an alias of the module at its new place."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, leaf = fullname.rpartition(".")
        if package != __package__ or leaf not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = f"{__package__}.{MOVED[spec.name.rpartition('.')[2]]}"
        warnings.warn(f"{spec.name} moved to {new}", DeprecationWarning, stacklevel=3)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:
        """The module is already executed at its new place."""


def install() -> None:
    """Make the old module paths importable (idempotent)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
