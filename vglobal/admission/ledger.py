"""The cycle ledger: what one admission cycle has decided, and one undo for everything it changes.

A cycle changes queue charges (share/checks.py), each cluster's free rows, cursors and misfits
(fit/placement.py), the GPU cards taken (fit/devices.py), the node-group counts
(fit/group_limits.py), the victims taken (victims/preempt.py, reclaim_pods.py, reclaim_jobs.py),
its decisions and the order of its admissions. The ledger holds the decisions and the admitted
order; every other change is written through it, so that while a checkpoint is open it keeps how
to undo the change. A HyperJob's decision (fit/hyperjob.py) is tried at a checkpoint and kept or
rolled back whole; nothing else keeps state of its own to put back.

Outside a checkpoint a write is the bare write (the hot path of a busy cycle pays one test).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping
from typing import Any, NewType, Protocol

from vglobal.admission.snapshot import Admit, Wait

Mark = NewType("Mark", int)  # how many checkpoints were open when it was taken, plus one
Undo = Callable[[], object]

_ABSENT = object()


class _Indexed(Protocol):
    """A list or a numpy array."""

    def __getitem__(self, i: int, /) -> Any: ...
    def __setitem__(self, i: int, value: Any, /) -> None: ...


class _Level:
    """One open checkpoint: where its undo entries and its waiting effects start, and what was
    saved whole since."""

    __slots__ = ("after", "saved", "start")

    def __init__(self, start: int, after: int) -> None:
        self.start, self.after = start, after
        self.saved: set[Hashable] = set()


class Ledger:
    __slots__ = ("_after", "_levels", "_saved", "_undo", "admitted", "decisions", "open")

    def __init__(self) -> None:
        self.decisions: dict[str, Admit | Wait] = {}  # one per pending job decided so far
        self.admitted: list[str] = []  # uids in the order admitted
        self._undo: list[Undo] = []
        self._levels: list[_Level] = []
        self._after: list[Undo] = []  # effects waiting for the outermost checkpoint to be kept
        self._saved: set[Hashable] = set()  # what any open checkpoint saved whole (a fast `saved`)
        # Whether a checkpoint is open (a change is then noted to be undone): a plain attribute,
        # read on the hot path.
        self.open = False

    # --- checkpoints ------------------------------------------------------------------------------
    def checkpoint(self) -> Mark:
        """From now on every change can be taken back with ``rollback`` (checkpoints nest)."""
        self._levels.append(_Level(len(self._undo), len(self._after)))
        self.open = True
        return Mark(len(self._levels))

    def rollback(self, mark: Mark) -> None:
        """Everything changed since ``mark`` was taken is as it was then, last change undone first;
        the checkpoints taken since are closed."""
        level, outer = self._levels[mark - 1], self._levels[: mark - 1]
        self._levels, self.open = [], False  # what an undo writes is not noted again
        undo = self._undo
        while len(undo) > level.start:
            undo.pop()()
        self._levels = outer
        del self._after[level.after :]
        self._close()

    def keep(self, mark: Mark) -> None:
        """The changes since ``mark`` stay (an enclosing checkpoint may still take them back)."""
        del self._levels[mark - 1 :]
        self._close()

    def _close(self) -> None:
        self.open = bool(self._levels)
        self._saved = set().union(*(level.saved for level in self._levels))
        if self._levels:
            return
        self._undo.clear()
        after, self._after = self._after, []
        for effect in after:
            effect()

    # --- writes ----------------------------------------------------------------------------------
    def undo_with(self, undo: Undo) -> None:
        """A change was made: ``undo`` takes it back (noted only while a checkpoint is open)."""
        if self._levels:
            self._undo.append(undo)

    def save_once(self, key: Hashable, restore: Callable[[], Undo]) -> None:
        """A change to the part named ``key`` is about to be made: the first time since the last
        checkpoint, ``restore()`` is called to copy it and returns what puts the copy back."""
        if self._levels:
            saved = self._levels[-1].saved
            if key not in saved:
                saved.add(key)
                self._saved.add(key)
                self._undo.append(restore())

    def saved(self, key: Hashable) -> bool:
        """Whether the part named ``key`` was saved whole under an open checkpoint."""
        return key in self._saved

    def when_kept(self, effect: Undo) -> None:
        """``effect`` happens once the changes made so far are kept for good (now, if no checkpoint
        is open); a rollback past this point drops it."""
        if self._levels:
            self._after.append(effect)
        else:
            effect()

    def put(self, mapping: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value``."""
        if self._levels:
            old = mapping.get(key, _ABSENT)
            self._undo.append(lambda: _restore(mapping, key, old))
        mapping[key] = value

    def add(self, members: set[Any], items: Any) -> None:
        """``members |= items``."""
        if self._levels:
            new = [x for x in items if x not in members]
            self._undo.append(lambda: members.difference_update(new))
        members.update(items)

    def set_at(self, seq: _Indexed, i: int, value: Any) -> None:
        """``seq[i] = value`` (a list, or a numpy array: the old value is copied)."""
        if self._levels:
            old = seq[i]
            old = old.copy() if hasattr(old, "copy") else old
            self._undo.append(lambda: seq.__setitem__(i, old))
        seq[i] = value

    # --- what the cycle decided ------------------------------------------------------------------
    def decide(self, uid: str, decision: Admit | Wait) -> None:
        self.put(self.decisions, uid, decision)

    def admit(self, uid: str, decision: Admit) -> None:
        """The job is admitted: its decision, and its place in the admitted order."""
        self.put(self.decisions, uid, decision)
        self.admitted.append(uid)
        if self._levels:
            self._undo.append(self.admitted.pop)


def _restore(mapping: MutableMapping[Any, Any], key: Any, old: Any) -> None:
    if old is _ABSENT:
        mapping.pop(key, None)
    else:
        mapping[key] = old
