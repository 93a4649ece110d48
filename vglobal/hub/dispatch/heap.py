"""The cyclic garbage collector around reads that build objects the dispatcher keeps for long.

A full read of the dispatcher's cache makes millions of objects at a million jobs, all kept. The
collector would scan the growing heap again and again while they are made (a third of the read's
CPU, each full pass holding the interpreter, so the API's threads, for seconds). Nothing the cache
holds forms reference cycles: reference counting frees each object when the cache lets it go.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector waits while the block runs."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_state = {"frozen": False}  # the heap was frozen once in this process (kept_heap)


@contextmanager
def kept_heap() -> Iterator[None]:
    """Around a new leader's first read: garbage made before is collected first (a hub just
    started holds little), the collector waits during the read, and what the read built is then
    frozen out of its scans for good, so no later pass rescans it. Once per process: whatever is
    alive when the heap is frozen and later dies in a cycle is never collected (a hub's start-up
    objects live as long as it does), so a later first read (leadership won again, a cache
    cleared after a fault) only pauses the collector."""
    if _state["frozen"]:
        with paused_gc():
            yield
        return
    gc.collect()
    with paused_gc():
        try:
            yield
        finally:
            gc.freeze()
            _state["frozen"] = True
