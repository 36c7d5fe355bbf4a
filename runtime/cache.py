"""The caches the backends share: one directory on disk, bounded, and bounded in-memory maps.

- Directory (:func:`cache_dir`): ``$AFFINE_IR_CACHE`` when set, else platformdirs'
  ``user_cache_dir("affine-ir")`` (``$XDG_CACHE_HOME/affine-ir`` or ``~/.cache/affine-ir`` on
  Linux, the platform's own cache folder elsewhere).
- On disk an *entry* is the group of files ``<key><suffix>`` of one key (a hex digest), e.g.
  ``<key>.o`` + ``<key>.json`` for the CPU backend, ``<key>.cubin`` + ``<key>.nvrtc.json`` for
  NVRTC. Files are written atomically (temporary file + rename), the last one listed marks the
  entry complete. A hit touches the entry's files (their modification time is the entry's last
  use: access times are unreliable under ``noatime``/``relatime``).
- Size bound (:func:`max_bytes`): :data:`DEFAULT_MAX_BYTES` (1 GiB), or
  ``$AFFINE_IR_CACHE_MAX_BYTES`` (bytes, or with a K/M/G suffix; 0 keeps nothing; a malformed
  value warns and keeps the default). After every store the least recently used entries are
  removed until the directory fits (:func:`evict`).
- Every disk failure is ignored (the cache is an optimization): a read gives a miss, a write is
  skipped.
- :class:`LRUCache`: a thread-safe in-memory map of at most ``maxsize`` entries that drops the
  least recently used one.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["CACHE_DIR_ENV", "DEFAULT_MAX_BYTES", "MAX_BYTES_ENV", "LRUCache", "cache_dir", "evict", "max_bytes",
           "read_entry", "write_entry"]

#: The environment variable that moves the cache directory.
CACHE_DIR_ENV = "AFFINE_IR_CACHE"
#: The environment variable that sets the size bound of the disk cache.
MAX_BYTES_ENV = "AFFINE_IR_CACHE_MAX_BYTES"
#: The size bound of the disk cache without ``$AFFINE_IR_CACHE_MAX_BYTES``.
DEFAULT_MAX_BYTES = 1 << 30
_TEMP_PREFIX = ".tmp-"
_STALE_TEMP_S = 3600.0  # a temporary file this old was left by a process that died while writing
_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)i?b?\s*$", re.I)


def _user_cache_root() -> Path:
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # platformdirs is a dependency; this keeps an incomplete environment working
        xdg = os.environ.get("XDG_CACHE_HOME")
        return Path(xdg if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "affine-ir"
    return Path(user_cache_dir("affine-ir", appauthor=False))


def cache_dir() -> Path:
    """The cache directory: ``$AFFINE_IR_CACHE`` if set, else the user cache dir of platformdirs
    (honours ``$XDG_CACHE_HOME``). Read on every call, so changing the variable takes effect."""
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else _user_cache_root()


def max_bytes() -> int:
    """The disk cache's size bound in bytes: ``$AFFINE_IR_CACHE_MAX_BYTES`` (``1073741824``,
    ``512M``, ``2G``...) or :data:`DEFAULT_MAX_BYTES`. ValueError naming the variable when its
    value is not a size."""
    env = os.environ.get(MAX_BYTES_ENV)
    if env is None or not env.strip():
        return DEFAULT_MAX_BYTES
    m = _SIZE.match(env)
    if m is None:
        raise ValueError(f"${MAX_BYTES_ENV}={env!r} is not a size (expected bytes, e.g. 1073741824, 512M or 2G)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def read_entry(key: str, suffixes: Sequence[str]) -> list[bytes] | None:
    """The contents of the files ``<key><suffix>`` in order, or None when one is missing or
    unreadable. A hit marks the entry as just used."""
    d = cache_dir()
    paths = [d / f"{key}{s}" for s in suffixes]
    try:
        data = [p.read_bytes() for p in paths]
    except OSError:
        return None
    for p in paths:
        try:
            os.utime(p)
        except OSError:
            pass
    return data


def write_entry(key: str, files: Sequence[tuple[str, bytes]]) -> None:
    """Store the files ``<key><suffix>`` (``files``: (suffix, data) pairs, the last one marks the
    entry complete) atomically, then evict least recently used entries down to :func:`max_bytes`.
    Failures are ignored."""
    d = cache_dir()
    limit = _bound()
    try:
        d.mkdir(parents=True, exist_ok=True)
        for suffix, data in files:
            fd, tmp = tempfile.mkstemp(dir=d, prefix=_TEMP_PREFIX)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, d / f"{key}{suffix}")
            except BaseException:
                _unlink(Path(tmp))
                raise
    except OSError:
        return
    evict(limit)


def _bound() -> int:
    """:func:`max_bytes`, or the default with a warning when the variable is malformed (a typo in
    it must not stop compiling, nor pass unnoticed)."""
    try:
        return max_bytes()
    except ValueError as e:
        warnings.warn(f"{e}; using the default bound of {DEFAULT_MAX_BYTES} bytes", RuntimeWarning, stacklevel=3)
        return DEFAULT_MAX_BYTES


def evict(limit: int | None = None) -> int:
    """Remove whole entries, least recently used first, until the cache directory holds at most
    ``limit`` bytes (default :func:`max_bytes`); also removes temporary files left by a writer
    that died. Returns the number of bytes removed. Failures are ignored (another process may be
    evicting the same files)."""
    limit = _bound() if limit is None else limit
    entries, total, freed = _scan(cache_dir())
    for _last_use, size, paths in sorted(entries.values(), key=lambda e: e[0]):
        if total <= limit:
            break
        for p in paths:
            _unlink(p)
        total -= size
        freed += size
    return freed


def _scan(d: Path) -> tuple[dict[str, tuple[float, int, list[Path]]], int, int]:
    """The entries of ``d`` by key as (last use, bytes, files), their total bytes, and the bytes
    of the stale temporary files removed on the way."""
    entries: dict[str, tuple[float, int, list[Path]]] = {}
    total = stale = 0
    now = time.time()
    try:
        listing = list(os.scandir(d))
    except OSError:
        return entries, 0, 0
    for f in listing:
        try:
            if not f.is_file(follow_symlinks=False):
                continue
            st = f.stat(follow_symlinks=False)
        except OSError:
            continue
        if f.name.startswith(_TEMP_PREFIX):
            if now - st.st_mtime > _STALE_TEMP_S and _unlink(Path(f.path)):
                stale += st.st_size
            continue
        key = f.name.split(".", 1)[0]
        last, size, paths = entries.get(key, (0.0, 0, []))
        entries[key] = (max(last, st.st_mtime), size + st.st_size, [*paths, Path(f.path)])
        total += st.st_size
    return entries, total, stale


def _unlink(p: Path) -> bool:
    try:
        p.unlink()
        return True
    except OSError:
        return False


K = TypeVar("K")
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A thread-safe map of at most ``maxsize`` entries (a callable is read on every insertion, so
    a module constant can be changed at run time); inserting beyond it drops the least recently
    used entry (a :meth:`get` hit counts as a use)."""

    def __init__(self, maxsize: int | Callable[[], int]):
        self._maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def maxsize(self) -> int:
        """The bound now in force (at least 0)."""
        return max(0, self._maxsize() if callable(self._maxsize) else self._maxsize)

    def get(self, key: K) -> V | None:
        """The value stored under ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key`` as the most recently used entry, dropping the least
        recently used ones beyond :attr:`maxsize`."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            limit = self.maxsize
            while len(self._data) > limit:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data
