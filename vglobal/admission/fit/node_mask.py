"""Which nodes of a cluster a job's gang may use, for the victim planners (preempt.py, reclaim.py,
reclaim_pods.py): they free room, and count victims, only where the job could then run.

Two things narrow a cluster for a job: its queue's node groups (nodegroups.py; a fixed set of
rows) and running pods its pods may not sit beside (required pod anti-affinity, pod_anti.py; a
row is open again once every such pod on it is a victim). A planner asks ``NodeMask(c)`` for one
cluster's ``Usable`` and packs the gang onto ``usable.apply(free, gone)``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from vglobal.admission.fit.index import IntArray

BoolArray = npt.NDArray[np.bool_]
_NO_BLOCKERS: Mapping[int, frozenset[str]] = MappingProxyType({})
BLOCKED = 1 << 60  # what a closed row holds away from a gang: more than any node has


@dataclass(frozen=True, slots=True)
class Usable:
    """The node rows of one cluster a gang may use: ``rows`` (None: all) less the rows where a pod
    it may not sit beside stays (``blockers``: row -> uids of such pods)."""

    rows: BoolArray | None = None
    blockers: Mapping[int, frozenset[str]] = field(default_factory=lambda: _NO_BLOCKERS)

    @property
    def everywhere(self) -> bool:
        return self.rows is None and not self.blockers

    def admits(self, row: int) -> bool:
        """Whether a victim's pod on the row (-1: a node not known) may count: with no node groups
        any may (it frees queue charge at least), else only one on a node of them."""
        return self.rows is None or (row >= 0 and bool(self.rows[row]))

    def closed(self, gone: Collection[str]) -> list[int]:
        """Rows the gang may not use once the pods ``gone`` are evicted."""
        out = [] if self.rows is None else np.flatnonzero(~self.rows).tolist()
        out += [r for r, pods in self.blockers.items() if not pods.issubset(gone)]
        return out

    def open_rows(self, nodes: int) -> BoolArray | None:
        """The rows of the cluster's ``nodes`` the gang may use with no pod gone, None if all (for
        planners that know victims as whole jobs, not pod by pod)."""
        if self.everywhere:
            return None
        keep = np.ones(nodes, dtype=bool)
        keep[self.closed(())] = False
        return keep

    def apply(self, free: IntArray, gone: Collection[str] = ()) -> IntArray:
        """``free`` with the rows the gang may not use emptied (a copy when any is)."""
        if self.everywhere:
            return free
        rows = self.closed(gone)
        if not rows:
            return free
        out = free.copy()
        out[rows] = 0
        return out


EVERYWHERE = Usable()
NodeMask = Callable[[int], Usable]  # per cluster (placement's index), the job's usable rows


def everywhere(c: int) -> Usable:
    return EVERYWHERE


def closed_rows(free: IntArray, rows: Sequence[int]) -> IntArray | None:
    """A Held matrix for placement.fit that keeps the gang off ``rows`` (None: no row closed)."""
    if not rows:
        return None
    held = np.zeros_like(free)
    held[list(rows)] = BLOCKED
    return held
