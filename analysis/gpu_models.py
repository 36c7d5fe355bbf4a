"""Fitted GPU cost models: the data ``gpu-schedule`` chooses tiles and k splits from.

A :class:`GPUCostModel` is what one GPU's measurements say about the tiled contraction kernels:
the tile configurations to consider, per configuration the share of the fp32 FMA rate its blocks
reach and how many fit on a multiprocessor, the warps that hide load latency, the launch costs,
and the limits of the split-K search. It is data of the target (``GPUTarget.gpu_model``), shipped
as a JSON file per GPU in ``analysis/data/`` with its provenance (what was measured, when, with
which command, and how it was fitted)::

    >>> from analysis.gpu_models import load_gpu_model
    >>> m = load_gpu_model("h200")
    >>> m.tile_configs[0], m.rate_of((128, 128, 8, 8))
    ((128, 128, 16, 8, 8), (0.53, 2))

To fit a model for another GPU: run ``benchmarks/gpu_tiles.py`` on it, fit with
``benchmarks/fit_gpu_tiles.py``, write ``analysis/data/gpu_model_<name>.json`` in the format of
``gpu_model_h200.json`` and give the target ``gpu_model=load_gpu_model("<name>")``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType

__all__ = ["GPUCostModel", "TileKey", "gpu_model_from_dict", "gpu_model_path", "load_gpu_model"]

#: A tile configuration without its k step: (BM, BN, TM, TN).
TileKey = tuple[int, int, int, int]


@dataclass(frozen=True)
class GPUCostModel:
    """The constants of ``gpu-schedule``'s cost model (``estimate_seconds``) for one GPU.

    ``rates``: per measured tile configuration ``(BM, BN, TM, TN)``, (share of the fp32 FMA rate
    its blocks reach with enough warps, blocks resident per multiprocessor); ``latency_warps``:
    the warps per multiprocessor that hide load latency; ``launch_s`` / ``split_launch_s``: the
    fixed cost of a launch and of the launch adding split slices. ``tile_configs``: the
    ``(BM, BN, BK, TM, TN)`` candidates, largest first. The split-K search tries at most
    ``max_splits`` slices of at least ``min_slice_steps`` k steps, and at most
    ``max_split_blocks_per_sm`` blocks per multiprocessor; ``max_aligned_bk`` is the largest k step
    raised to whole windows; a tile without a measured rate is estimated with
    ``register_overhead_per_thread`` registers per thread besides its register tile.
    ``provenance``: where the numbers come from (not compared).
    """

    rates: Mapping[TileKey, tuple[float, int]] = field(hash=False)
    latency_warps: float
    launch_s: float
    split_launch_s: float
    tile_configs: tuple[tuple[int, int, int, int, int], ...] = ()
    max_splits: int = 32
    min_slice_steps: int = 8
    max_split_blocks_per_sm: int = 4
    max_aligned_bk: int = 36
    register_overhead_per_thread: int = 64
    provenance: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rates", MappingProxyType(dict(self.rates)))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))
        object.__setattr__(self, "tile_configs", tuple(tuple(c) for c in self.tile_configs))

    def rate_of(self, key: TileKey) -> tuple[float, int] | None:
        """The measured (share of the fp32 rate, resident blocks) of tiles ``(BM, BN, TM, TN)``, or None."""
        return self.rates.get(tuple(key))


def gpu_model_from_dict(data: Mapping) -> GPUCostModel:
    """The model described by ``data`` (the JSON format of ``analysis/data/gpu_model_*.json``);
    KeyError naming a missing required field."""
    rates = {tuple(r["tile"]): (r["fma_share"], r["blocks_per_sm"]) for r in data["rates"]}
    optional = ("max_splits", "min_slice_steps", "max_split_blocks_per_sm", "max_aligned_bk",
                "register_overhead_per_thread")
    return GPUCostModel(rates, data["latency_warps"], data["launch_s"], data["split_launch_s"],
                        tile_configs=tuple(tuple(c) for c in data["tile_configs"]),
                        provenance=dict(data.get("provenance", {})),
                        **{k: data[k] for k in optional if k in data})


def gpu_model_path(name: str):
    """The shipped data file of the model of GPU ``name`` (an ``importlib.resources`` path: it is
    found from an installed copy too); it may not exist."""
    return resources.files("analysis").joinpath("data", f"gpu_model_{name.lower()}.json")


def load_gpu_model(name: str) -> GPUCostModel:
    """The fitted model shipped for GPU ``name``; FileNotFoundError naming the file when none is."""
    path = gpu_model_path(name)
    if not path.is_file():
        raise FileNotFoundError(f"no fitted GPU model for {name!r}: {path} does not exist (see analysis.gpu_models "
                                f"for how to fit one)")
    return gpu_model_from_dict(json.loads(path.read_text(encoding="utf-8")))
