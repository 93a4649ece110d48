"""Starvation guard: where a long-waiting gang holds capacity against its own queue's later jobs.

Without it a big gang waits forever behind small jobs of its own queue that keep taking the nodes
it needs as they free up (Volcano Global's head-of-line starvation). Lower- or equal-priority jobs
of the same queue may not use the held node capacity; other queues compete for it by fair share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.admission.explain import (
    behind_reason,
    fmt_row,
    never_fits_reason,
    no_fit_reason,
    reserved_reason,
    starving_reason,
)
from vglobal.admission.fit.devices import CardPacker
from vglobal.admission.fit.gang import PreparedGang, pack
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.prepare import Job, Leaf
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Snapshot, Wait, job_ref
from vglobal.model.reasons import WaitKind


class Hold:
    """Per-node capacity a starving gang keeps on one cluster: packed onto the nodes that were
    emptiest when it was made. Most holds are never consulted in their cycle (the queue places
    nothing more there), so the matrix is worked out from a copy of the free rows on first use."""

    __slots__ = ("_clusters", "_free", "_gang", "_matrix", "cluster")

    def __init__(self, clusters: Clusters, c: int, gang: PreparedGang) -> None:
        self.cluster = c
        self._clusters = clusters
        self._gang = gang
        self._free = list(clusters.rows[c])  # rows are replaced, never changed in place
        self._matrix: IntArray | None = None

    def _pack(self) -> IntArray | None:
        room = self._clusters.alloc[self.cluster]
        dims = self._gang.dims
        free = np.array(self._free, dtype=np.int64).reshape(room.shape)
        busy = (room[:, dims] - free[:, dims]).sum(axis=1)
        order = np.argsort(busy, kind="stable")
        _, after = pack(room[order], self._gang.shapes)
        if after is None:
            return None
        held = np.zeros_like(room)
        held[order] = room[order] - after
        return held

    @property
    def matrix(self) -> IntArray:
        if self._matrix is None:
            got = self._pack()
            assert got is not None, "a hold is only made where the gang fits the empty cluster"
            self._matrix = got
        return self._matrix


def by_free_share(clusters: Clusters, fits: Sequence[int], dims: Sequence[int]) -> list[tuple[float, int]]:
    """These clusters, the largest free share of these resources first, then by name."""
    alloc = clusters.alloc_totals
    tot = clusters.tot
    return sorted((-sum([tot[c][r] / alloc[c][r] for r in dims]), c) for c in fits)


def reservation(
    clusters: Clusters, fits: Sequence[int], gang: PreparedGang, shares: list[tuple[float, int]] | None = None
) -> Hold | None:
    """Where to hold capacity for a gang that fits these clusters when they are empty.

    The cluster with the largest free share of what the gang needs wins (it completes soonest), then
    the name; on it, the gang is packed onto the nodes that are emptiest now. ``shares``: the
    clusters as by_free_share orders them, if known.
    """
    if shares is None:
        shares = by_free_share(clusters, fits, gang.dims.tolist())
    for _, c in shares:
        hold = Hold(clusters, c, gang)
        # One shape packs onto any node order once it fits the empty cluster; mixed shapes are
        # packed now, since first-fit in another node order may fail.
        if len(gang.shapes) > 1:
            hold._matrix = hold._pack()
            if hold._matrix is None:
                continue
        return hold
    return None


class Starvation:
    """A cycle's starvation guard: which jobs starve, the one reservation per queue they make, and
    the reasons of the jobs that wait behind it."""

    def __init__(self, snapshot: Snapshot, clusters: Clusters, tree: QueueTree, index: ResourceIndex) -> None:
        self.now, self.after = snapshot.now, snapshot.policy.starvation_after
        self.clusters, self.tree, self.index = clusters, tree, index
        self._names: dict[str, str] = {}  # uid -> job_ref of the starving jobs that reserve
        self._behind: dict[tuple[str, str, str | None], Wait] = {}
        # by_free_share per (resources, clusters), with the clusters' moves it was made at: a busy
        # cycle has thousands of starving queues' heads asking the same while nothing moved.
        self._shares: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, list[tuple[float, int]]]] = {}

    def starving(self, job: Job) -> bool:
        return self.now - job.snap.waiting_since > self.after

    def reserve(self, job: Job, leaf: Leaf, best: str, cards: CardPacker | None = None) -> Wait:
        """The queue's first starving job that fits nowhere now holds capacity where it could fit
        (with ``cards``, where its GPU cards could hold it too)."""
        clusters = self.clusters
        head = no_fit_reason(clusters.describe(job.gang), best)
        fits = clusters.fits_allocatable(job.cand, job.gang)
        if cards is not None:
            fits = [c for c in fits if cards.could_ever(c, job.gang)]
        dims = tuple(job.gang.dims.tolist())
        key = (dims, tuple(fits))
        got = self._shares.get(key)
        if got is None or got[0] != clusters.moves:
            got = self._shares[key] = (clusters.moves, by_free_share(clusters, fits, dims))
        found = reservation(clusters, fits, job.gang, got[1])
        if found is None:
            return Wait(WaitKind.NeverFits, never_fits_reason(head))
        c = found.cluster
        leaf.held[c] = found
        leaf.held_for[c] = job.snap.uid
        leaf.starving = job.snap.uid
        self._names[job.snap.uid] = job_ref(job.snap)
        held = fmt_row(self.index, job.gang.total.tolist())
        return Wait(
            WaitKind.Starving,
            starving_reason(
                head,
                int(self.now - job.snap.waiting_since),
                self.after,
                held,
                clusters.names[c],
                self.tree.names[job.leaf],
            ),
        )

    def _name(self, uid: str) -> str:
        return self._names.get(uid, uid)

    def behind(self, job: Job, leaf: Leaf, best: str) -> Wait:
        """A starving job of a queue that already holds a reservation for an earlier one."""
        key = (job.gang.tag, best, leaf.starving)
        got = self._behind.get(key)
        if got is None:
            got = Wait(
                WaitKind.BehindStarving,
                behind_reason(
                    self.clusters.describe(job.gang),
                    best,
                    self._name(str(leaf.starving)),
                    self.tree.names[job.leaf],
                ),
            )
            self._behind[key] = got
        return got

    def reserved(self, job: Job, leaf: Leaf, cards: CardPacker | None = None) -> Wait | None:
        """The job would fit a cluster (and its GPU cards) but for its queue's reservation there, or None."""
        clusters = self.clusters
        for c in clusters.ranked(job.cand, job.gang):
            if (
                c in leaf.held
                and clusters.fit(c, job.gang) is not None
                and (cards is None or cards.on(clusters, c, job.gang) is not None)
            ):
                return Wait(
                    WaitKind.ReservedForStarving,
                    reserved_reason(
                        clusters.names[c],
                        clusters.describe(job.gang),
                        self._name(leaf.held_for[c]),
                        self.tree.names[job.leaf],
                    ),
                )
        return None
