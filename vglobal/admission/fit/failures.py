"""Gangs that fit no candidate cluster this cycle, so that a bigger gang fails without packing."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.gang import PreparedGang
from vglobal.admission.fit.index import IntArray


class FailureCache:
    """Gangs that fit no candidate cluster this cycle; a bigger gang then fails without packing.

    Free capacity only shrinks within a cycle, so a failure stays a failure.
    """

    def __init__(self) -> None:
        self._rows: dict[bytes, list[tuple[IntArray, int, str]]] = {}  # (pod row, pods, reason)
        self._stack: dict[bytes, tuple[IntArray, IntArray, list[str]]] = {}
        self._exact: dict[tuple[bytes, str], str] = {}
        self._misses: dict[tuple[bytes, str], int] = {}

    def lookup(self, cand: Candidates, gang: PreparedGang) -> str | None:
        ck = cand.key
        key = (ck, gang.tag)
        hit = self._exact.get(key)
        if hit is not None:
            return hit
        rows = self._rows.get(ck)
        if not rows or self._misses.get(key) == len(rows):
            return None  # nothing recorded since this gang last missed
        stacked = self._stack.get(ck)
        if stacked is None:
            stacked = (np.stack([r[0] for r in rows]), np.array([r[1] for r in rows]), [r[2] for r in rows])
            self._stack[ck] = stacked
        mat, counts, reasons = stacked
        for shape in gang.shapes:
            dominated: npt.NDArray[np.bool_] = (shape.row >= mat).all(axis=1) & (shape.count >= counts)
            if dominated.any():
                found = self._exact[key] = reasons[int(np.argmax(dominated))]
                return found
        self._misses[key] = len(rows)
        return None

    def record(self, cand: Candidates, gang: PreparedGang, reason: str, described: str) -> None:
        """`reason` says why the gang (`described`) fits no candidate. A bigger gang found through
        it is told that this smaller one does not fit either: its own figures were not packed."""
        ck = cand.key
        self._exact[(ck, gang.tag)] = reason
        if len(gang.shapes) == 1:
            bigger = f"not even the smaller gang {described} fits a candidate cluster ({reason})"
            self._rows.setdefault(ck, []).append((gang.shapes[0].row, gang.shapes[0].count, bigger))
            self._stack.pop(ck, None)
