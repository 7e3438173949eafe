"""One shared pool for metadata I/O (manifests, listings, tables of a warehouse), made on first
use: reading many small objects from an object store is latency-bound, not CPU-bound."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

READ_THREADS = 16

T = TypeVar("T")
R = TypeVar("R")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_worker = threading.local()


def _shared_pool() -> ThreadPoolExecutor:
    """The pool, created by the first call that needs it."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="paimon-io")
        return _pool


def parallel_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """Order-preserving map on the shared I/O pool; nested calls run inline (no pool deadlock)."""
    if len(items) <= 1 or getattr(_in_worker, "active", False):
        return [fn(i) for i in items]

    def run(item: T) -> R:
        _in_worker.active = True
        try:
            return fn(item)
        finally:
            _in_worker.active = False

    return list(_shared_pool().map(run, items))
