"""Targets own their models: the GPU passes take the cost model, launch limits and default block
sizes from ``analysis.targets``, so a second GPU (made up here, registered only for the test)
changes the chosen tiles and the blocks without any pass being edited."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import affine_ir as air
from affine_ir.dialects.gpu import LaunchOp
from analysis.gpu_models import GPUCostModel, gpu_model_from_dict, gpu_model_path, load_gpu_model
from analysis.targets import A100, H100, H200, TARGETS
from transforms import PassManager
from transforms.gpu.schedule_gpu import TileConfig, choose_schedule
from transforms.gpu.schedule_gpu_plan import COST, TILE_CONFIGS, estimate_seconds, split_candidates
from transforms.testing import map_to_gpu

ROOT = Path(__file__).resolve().parents[1]
L = air.library
FUSE = "canonicalize,affine-loop-fusion,affine-scalrep,canonicalize"

#: A made-up GPU: small tiles measured fast, large ones slow; tiny grids, 128-thread blocks.
TOY_MODEL = GPUCostModel(rates={(32, 32, 2, 2): (0.9, 8), (64, 64, 4, 4): (0.05, 4)}, latency_warps=1,
                         launch_s=1e-6, split_launch_s=1e-5, tile_configs=((64, 64, 8, 4, 4), (32, 32, 8, 2, 2)))
TOY = dataclasses.replace(H200, name="toy", gpu_model=TOY_MODEL, max_threads_per_block=128,
                          max_grid_dims=(2**31 - 1, 8, 8), default_block_sizes=((64,), (16, 8), (8, 4, 4)),
                          default_threads_per_block=128)


@pytest.fixture
def toy(monkeypatch):
    """The toy GPU, known to ``analysis.targets.target`` by name for this test only."""
    monkeypatch.setitem(TARGETS, "toy", TOY)
    return TOY


def launches(module) -> list[LaunchOp]:
    return [op for op in module.walk() if isinstance(op, LaunchOp)]


def block_of(launch: LaunchOp) -> tuple:
    return tuple(v.owner.value for v in launch.block_size)


# -- the shipped model -------------------------------------------------------------------------------------------
def test_h200_model_is_shipped_data_with_its_provenance():
    model = load_gpu_model("h200")
    assert H200.gpu_model == model and H200.schedule_model is H200.gpu_model
    assert COST is H200.schedule_model and TILE_CONFIGS == model.tile_configs
    raw = json.loads(Path(str(gpu_model_path("h200"))).read_text())
    assert gpu_model_from_dict(raw) == model
    prov = model.provenance
    assert {"device", "measured", "date", "measure_command", "data", "fit_command"} <= set(prov)
    assert (ROOT / prov["data"]).is_file() and prov["data"] in prov["fit_command"]
    for bm, bn, _, tm, tn in model.tile_configs:  # every candidate has a measured rate
        assert model.rate_of((bm, bn, tm, tn)) is not None


def test_gpus_without_a_fit_fall_back_to_the_h200_fit_scaled_by_their_own_figures():
    assert H100.gpu_model is None and A100.gpu_model is None
    assert H100.schedule_model is H200.gpu_model and A100.schedule_model is H200.gpu_model
    t = TileConfig(128, 128, 16, 8, 8)
    sizes = (1, 4096, 4096, 4096)
    assert estimate_seconds(sizes, t, 1, A100) > estimate_seconds(sizes, t, 1, H200)  # fewer SMs, lower fp32 rate


def test_a_missing_model_file_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="no fitted GPU model for 'b200'"):
        load_gpu_model("b200")


def test_the_model_is_part_of_the_target_identity():
    unfitted = dataclasses.replace(TOY, gpu_model=None)
    assert TOY != unfitted and hash(TOY) == hash(unfitted)
    with pytest.raises(TypeError):
        TOY_MODEL.rates[(8, 8, 1, 1)] = (1.0, 1)


# -- a second target changes the decisions -------------------------------------------------------------------------
def test_a_second_target_model_changes_the_chosen_tiles(toy):
    sizes = (1, 4096, 4096, 4096)
    assert choose_schedule(sizes, H200) == (TileConfig(128, 128, 16, 8, 8), 1)
    assert choose_schedule(sizes, toy) == (TileConfig(32, 32, 8, 2, 2), 1)
    decisions = {}
    for name in ("h200", "toy"):
        pm = PassManager.parse(f"{FUSE},gpu-schedule{{target={name}}}")
        pm.run(L.matmul(512, 512, 512))
        decisions[name] = [d.message for d in pm.trace.decisions if d.kind == "applied" and
                           d.pass_name == "gpu-schedule"]
    assert "block tile 32x32" in decisions["toy"][0] and "k split" not in decisions["toy"][0]
    assert "block tile 128x64" in decisions["h200"][0] and "k split in 4 slices" in decisions["h200"][0]


def test_a_second_target_model_bounds_the_split_search(toy):
    sizes = (1, 512, 49, 4608)  # few blocks, long k: splits are tried
    t = TileConfig(32, 32, 8, 2, 2)
    fewer = dataclasses.replace(toy, gpu_model=dataclasses.replace(TOY_MODEL, max_splits=4))
    assert max(split_candidates(sizes, t, toy)) > 4 and max(split_candidates(sizes, t, fewer)) <= 4


def test_a_second_target_sets_gpu_maps_default_blocks_and_grid_limits(toy):
    out, _ = map_to_gpu(L.matmul(64, 96, 16), "gpu-map{target=toy}")
    assert {block_of(launch) for launch in launches(out)} == {(16, 8, 1)}
    out, _ = map_to_gpu(L.matmul(64, 96, 16), "gpu-map")
    assert {block_of(launch) for launch in launches(out)} == {(32, 8, 1)}
    pm = PassManager.parse("gpu-map{target=toy}")  # 128 rows / 8 threads = 16 blocks on y: over the toy's 8
    pm.run(L.matmul(128, 96, 16))
    refused = [d.message for d in pm.trace.decisions if d.kind == "refused"]
    assert refused and all("grid size 16 (trip count 128 / block 8) exceeds CUDA's limit 8 for y" in r
                           for r in refused)
    pm = PassManager.parse("gpu-map")
    pm.run(L.matmul(128, 96, 16))
    assert not [d for d in pm.trace.decisions if d.kind == "refused"]


def test_a_second_target_bounds_the_threads_of_blocks(toy):
    with pytest.raises(Exception, match="at most 128 threads per block"):
        PassManager.parse("gpu-map{block-sizes=256 target=toy}")
    PassManager.parse("gpu-map{block-sizes=256}")
    pipe = f"{FUSE},gpu-map-reductions{{block-size=1024 target=toy}},gpu-map"
    out, _ = map_to_gpu(L.softmax((4, 512)), pipe)
    assert max(block_of(launch)[0] for launch in launches(out)) == 128
    out, _ = map_to_gpu(L.softmax((4, 512)), f"{FUSE},gpu-map-reductions{{block-size=1024}},gpu-map")
    assert max(block_of(launch)[0] for launch in launches(out)) == 512
