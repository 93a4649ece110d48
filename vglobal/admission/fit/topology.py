"""Topology-aware cluster choice: can one HyperNode of a cluster hold a gang, and at which tier?

A hard-topology gang may only be dispatched to a cluster where ONE HyperNode of tier <= the job's
highest allowed tier can hold all its pods (packed first-fit decreasing onto that HyperNode's nodes'
free vectors, as placement.py packs a whole cluster); clusters are preferred by the lowest such
tier, because a lower tier is a closer network. ``highest tier None`` (e.g. only a tier name was
given, which the hub cannot map to a number) allows any tier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.gang import PreparedGang, Shape, pack, prepare_gang
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.packer import Packer
from vglobal.admission.fit.placement import Clusters, Held, Placement
from vglobal.admission.snapshot import ClusterSnap, Gang, HyperNodeSnap, node_order


@dataclass(frozen=True, slots=True)
class TopologyFit:
    tier: int
    hypernode: str
    after: IntArray  # the cluster's free matrix (all nodes) after placing the gang there


class HyperNodeRows:
    """Per cluster: its HyperNodes in (tier, name) order with the matrix rows of their nodes."""

    __slots__ = ("entries",)

    def __init__(self, hypernodes: Sequence[HyperNodeSnap], node_col: Mapping[str, int]) -> None:
        self.entries: list[tuple[int, str, IntArray]] = []
        for h in sorted(hypernodes, key=lambda h: (h.tier, h.name)):
            rows = np.array(sorted(node_col[n] for n in h.nodes if n in node_col), dtype=np.int64)
            if rows.size:
                self.entries.append((h.tier, h.name, rows))

    def lowest_fit(
        self, free: IntArray, shapes: Sequence[Shape], highest_tier: int | None, packer: Packer | None = None
    ) -> TopologyFit | None:
        """The first HyperNode in (tier, name) order that holds every pod of the gang."""
        for tier, name, rows in self.entries:
            if highest_tier is not None and tier > highest_tier:
                break
            sub = pack(free[rows], shapes)[1] if packer is None else packer(free[rows], rows, shapes)
            if sub is not None:
                after = free.copy()
                after[rows] = sub
                return TopologyFit(tier, name, after)
        return None


def lowest_tier(cluster: ClusterSnap, gang: Gang, highest_tier: int | None) -> int | None:
    """The lowest tier at which one HyperNode of ``cluster`` can hold ``gang`` on its free capacity."""
    names: set[str] = set()
    for n in cluster.nodes:
        names.update(n.free)
    for vec, _ in gang:
        names.update(vec)
    index = ResourceIndex(names)
    nodes = sorted(cluster.nodes, key=node_order)
    free = np.array([index.row(n.free) for n in nodes], dtype=np.int64).reshape(len(nodes), index.size)
    prepared = prepare_gang(gang, index, np.maximum(free.max(axis=0, initial=0), 1))
    rows = HyperNodeRows(cluster.hypernodes, {n.name: i for i, n in enumerate(nodes)})
    fit = rows.lowest_fit(np.maximum(free, 0), prepared.shapes, highest_tier)
    return None if fit is None else fit.tier


class HyperNodes:
    """The cycle's clusters with each one's HyperNode rows, built on first use."""

    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters
        self._rows: dict[int, HyperNodeRows] = {}

    def rows(self, c: int) -> HyperNodeRows:
        got = self._rows.get(c)
        if got is None:
            clusters = self.clusters
            got = self._rows[c] = HyperNodeRows(clusters.snaps[c].hypernodes, clusters.node_col[c])
        return got


def place_with_topology(
    hypernodes: HyperNodes,
    cand: Candidates,
    gang: PreparedGang,
    held: Mapping[int, Held],
    highest_tier: int | None,
    packer: Packer | None = None,
) -> tuple[int, IntArray] | None:
    """(cluster, free matrix after) for the candidate with the lowest-tier HyperNode holding the
    gang; among equal tiers the cluster policy's ranking decides. None if no cluster has one."""
    best: tuple[int, int, IntArray] | None = None
    clusters = hypernodes.clusters
    for c in clusters.ranked(cand, gang):
        rows = hypernodes.rows(c)
        hold = held.get(c)
        kept = None if hold is None else hold.matrix
        current = clusters.free(c)
        free = current if kept is None else np.maximum(current - kept, 0)
        if packer is not None:
            packer.start(c)
        fit = rows.lowest_fit(free, gang.shapes, highest_tier, packer)
        if fit is not None and (best is None or fit.tier < best[0]):
            after = fit.after if kept is None else current - (free - fit.after)
            best = (fit.tier, c, after)
    return None if best is None else (best[1], best[2])


def place(
    hypernodes: HyperNodes,
    cand: Candidates,
    gang: PreparedGang,
    held: Mapping[int, Held],
    topology: tuple[str, int | None] | None,
    packer: Packer | None = None,
) -> tuple[int, Placement] | None:
    """Where the gang goes now and how (committing is the caller's). With a network topology, the
    candidate with the lowest-tier HyperNode that holds it; a soft one falls back to the plain
    placement when no HyperNode does, a hard one does not. With a ``packer`` every packing goes
    through it (the gang's GPU cards fit too)."""
    clusters = hypernodes.clusters
    if topology is not None:
        found = place_with_topology(hypernodes, cand, gang, held, topology[1], packer)
        if found is not None:
            if packer is not None:
                packer.choose(found[0])  # its cards, not those of a cluster tried after it
            return found[0], clusters.placement_from(*found)
        if topology[0] == "hard":
            return None
    if packer is not None:
        return packer.place(clusters, cand, gang, held)
    return clusters.place(cand, gang, held)
