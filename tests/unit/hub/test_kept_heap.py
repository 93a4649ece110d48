"""A new leader's first read freezes what it built out of the cyclic collector's scans, once per
process; garbage made before it is collected first, and the collector runs again after."""

from __future__ import annotations

import gc
import weakref

import pytest

from vglobal.hub.dispatch import heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_the_first_read_collects_then_freezes_and_later_ones_only_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(heap._state, "frozen", False)  # as in a process that has not read yet
    try:
        _reads()
    finally:
        gc.unfreeze()  # the rest of the test process as it was


def _reads() -> None:
    garbage = _Node()
    gone = weakref.ref(garbage)
    del garbage
    frozen_before = gc.get_freeze_count()
    with heap.kept_heap():
        assert gone() is None  # collected before the read
        assert not gc.isenabled()
        kept = [_Node() for _ in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + len(kept)
    frozen = gc.get_freeze_count()
    with heap.kept_heap():
        assert not gc.isenabled()
        more = [_Node() for _ in range(100)]
    # Not frozen again: that would add the hundred new objects. The count may fall, since a frozen
    # object freed by its reference count leaves the permanent generation.
    assert gc.isenabled() and gc.get_freeze_count() <= frozen
    assert more
