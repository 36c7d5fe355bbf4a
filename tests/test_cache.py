"""The shared caches (``runtime.cache``): where the directory is, the size bound with
least-recently-used eviction on disk, and the bounded in-memory caches of both backends."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import runtime
from affine_ir import library as lib
from runtime import cache, cpu_jit, nvrtc


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    """An empty cache directory of this test, with the default size bound."""
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path))
    monkeypatch.delenv("AFFINE_IR_CACHE_MAX_BYTES", raising=False)
    return tmp_path


def _age(d: Path, key: str, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    for p in d.glob(f"{key}.*"):
        os.utime(p, (t, t))


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.iterdir())


# -- the directory ------------------------------------------------------------------------------

def test_the_environment_variable_moves_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path / "mine"))
    assert cache.cache_dir() == cpu_jit.cache_dir() == nvrtc.cache_dir() == tmp_path / "mine"


def test_without_the_variable_the_cache_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("AFFINE_IR_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    want = tmp_path / "xdg" / "affine-ir"
    assert cpu_jit.cache_dir() == want and nvrtc.cache_dir() == want


def test_the_suite_caches_in_a_temporary_directory(tmp_path_factory):
    assert cache.cache_dir().is_relative_to(tmp_path_factory.getbasetemp())  # see conftest._suite_cache


# -- the size bound --------------------------------------------------------------------------------

@pytest.mark.parametrize("text,size", [("4096", 4096), ("512K", 512 << 10), ("3m", 3 << 20), ("2GiB", 2 << 30),
                                       ("0", 0), ("", cache.DEFAULT_MAX_BYTES)])
def test_max_bytes_reads_the_environment(monkeypatch, text, size):
    monkeypatch.setenv("AFFINE_IR_CACHE_MAX_BYTES", text)
    assert cache.max_bytes() == size


def test_a_malformed_bound_names_the_variable(monkeypatch):
    monkeypatch.setenv("AFFINE_IR_CACHE_MAX_BYTES", "lots")
    with pytest.raises(ValueError, match=r"\$AFFINE_IR_CACHE_MAX_BYTES='lots' is not a size"):
        cache.max_bytes()


def test_a_malformed_bound_warns_and_keeps_caching(cache_root, monkeypatch):
    monkeypatch.setenv("AFFINE_IR_CACHE_MAX_BYTES", "1 GB please")
    with pytest.warns(RuntimeWarning, match="AFFINE_IR_CACHE_MAX_BYTES.*using the default bound"):
        cache.write_entry("aa", ((".o", b"x"),))
    assert cache.read_entry("aa", (".o",)) == [b"x"]


def test_eviction_removes_least_recently_used_whole_entries(cache_root, monkeypatch):
    for k, key in enumerate(("aa", "bb", "cc", "dd")):
        cache.write_entry(key, ((".json", b"{}" * 50), (".o", b"x" * 400)))
        _age(cache_root, key, 100 - k)  # aa oldest ... dd newest
    assert cache.read_entry("aa", (".o", ".json")) is not None  # a hit: aa is now the most recent
    monkeypatch.setenv("AFFINE_IR_CACHE_MAX_BYTES", str(2 * 500))
    cache.write_entry("ee", ((".json", b"{}" * 50), (".o", b"x" * 400)))  # 2500 bytes: keep the 2 newest
    names = sorted(p.name for p in cache_root.iterdir())
    assert names == ["aa.json", "aa.o", "ee.json", "ee.o"]
    assert _dir_bytes(cache_root) <= 1000


def test_evict_reports_bytes_and_removes_dead_writers_temporaries(cache_root):
    cache.write_entry("aa", ((".o", b"x" * 300),))
    stale = cache_root / ".tmp-dead"
    stale.write_bytes(b"y" * 50)
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    fresh = cache_root / ".tmp-writing"
    fresh.write_bytes(b"z" * 10)
    assert cache.evict(0) == 350
    assert sorted(p.name for p in cache_root.iterdir()) == [".tmp-writing"]


def test_a_missing_file_is_a_miss(cache_root):
    cache.write_entry("aa", ((".json", b"{}"), (".o", b"x")))
    (cache_root / "aa.o").unlink()
    assert cache.read_entry("aa", (".o", ".json")) is None


def test_an_unwritable_directory_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("AFFINE_IR_CACHE", str(blocker / "cache"))
    cache.write_entry("aa", ((".o", b"x"),))  # no exception: the cache is an optimization
    assert cache.read_entry("aa", (".o",)) is None


def test_cpu_disk_cache_stays_within_the_bound(cache_root, monkeypatch):
    runtime.cpu.compile(lib.softmax((3, 4)))
    entry = _dir_bytes(cache_root)
    monkeypatch.setenv("AFFINE_IR_CACHE_MAX_BYTES", str(int(entry * 2.5)))
    for n in (5, 6, 7):
        runtime.cpu.compile(lib.softmax((3, n)))
    assert _dir_bytes(cache_root) <= entry * 2.5
    assert 1 <= len(list(cache_root.glob("*.o"))) < 4  # the oldest went
    runtime.cpu.clear_memory_cache()
    assert runtime.cpu.compile(lib.softmax((3, 7))).cache == "disk"  # the newest stayed


def test_nvrtc_disk_cache_stays_within_the_bound(cache_root, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="the cuda extra is not installed")
    src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\n'
    nvrtc.clear_memory_cache()
    nvrtc.compile_cuda(src)
    entry = _dir_bytes(cache_root)
    monkeypatch.setenv("AFFINE_IR_CACHE_MAX_BYTES", str(entry))
    nvrtc.compile_cuda(src + "// another\n")
    assert len(list(cache_root.glob("*.cubin"))) == 1 and _dir_bytes(cache_root) <= entry + 64
    nvrtc.clear_memory_cache()


# -- in memory -------------------------------------------------------------------------------------------

def test_lru_cache_drops_the_least_recently_used():
    c: cache.LRUCache[str, int] = cache.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # a is now more recent than b
    c.put("c", 3)
    assert "b" not in c and c.get("a") == 1 and c.get("c") == 3 and len(c) == 2


def test_cpu_memory_cache_is_bounded(cache_root, monkeypatch):
    monkeypatch.setattr(runtime.cpu, "MEMORY_CACHE_SIZE", 2)
    runtime.cpu.clear_memory_cache()
    kernels = [runtime.cpu.compile(lib.softmax((2, n)), opt_level=0) for n in (3, 4, 5, 6)]
    assert runtime.cpu.cache_info()["entries"] == 2
    assert all(k.cache == "compiled" for k in kernels)
    runtime.cpu.clear_memory_cache()
