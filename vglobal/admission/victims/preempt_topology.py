"""Where a hard-topology gang may take victims: inside ONE HyperNode of its allowed tier at a time
(Volcano's gang-aware, HyperNode-first eviction, gangpreempt's ``GetCandidateDomains``).

Victims freeing room in two switches make room in neither: the gang would be dispatched, fit no
HyperNode on its cluster and be handed back, and its victims would have gone for nothing. So each
HyperNode of tier <= the job's highest allowed tier that could hold the gang with every lower
priority pod in it gone is a search domain of its own: victims count only there, the gang must
pack only there, and a plan keeps the gang off every other node. Of the domains that give a plan,
the one with the fewest victims (then fewest pods) wins, ties by (tier, name). Reclaim, which
searches one domain per cluster, gets the gang's mask confined to one such HyperNode (``confine``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from vglobal.admission.fit.gang import PreparedGang
from vglobal.admission.fit.index import IntArray
from vglobal.admission.fit.node_mask import Usable
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.fit.topology import HyperNodeRows, HyperNodes
from vglobal.admission.victims.ask import Ask

# HyperNodes a plan searches on one cluster (each packs the gang once per victim it tries); the
# most roomy first, so a large fabric costs no more than a few switches.
HYPERNODES_PER_PLAN = 8


def hard_limit(topology: tuple[str, int | None] | None) -> tuple[bool, int | None]:
    """(whether victims must sit in one HyperNode, the highest tier allowed: None = any)."""
    if topology is None or topology[0] != "hard":
        return False, None
    return True, topology[1]


def domains(
    rows: HyperNodeRows,
    limit: int | None,
    free: IntArray,
    victim_room: IntArray,
    gang: PreparedGang,
) -> list[IntArray]:
    """The HyperNodes (their rows) worth a plan: of tier <= ``limit``, holding the gang's total
    with their free room and all their victims' room; the roomiest HYPERNODES_PER_PLAN (by the
    gang's tightest dimension), in (tier, name) order."""
    d = np.flatnonzero(gang.total > 0)
    scored: list[tuple[float, int, str, IntArray]] = []
    for tier, name, r in rows.entries:
        if limit is not None and tier > limit:
            break
        room = free[r].clip(min=0).sum(axis=0) + victim_room[r].sum(axis=0)
        if (room[d] < gang.total[d]).any():
            continue
        ratio = float((room[d] / gang.total[d]).min()) if d.size else 0.0
        scored.append((ratio, tier, name, r))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    kept = sorted(scored[:HYPERNODES_PER_PLAN], key=lambda s: (s[1], s[2]))
    return [r for _, _, _, r in kept]


def within(usable: Usable, rows: IntArray, nodes: int) -> Usable:
    """``usable`` narrowed to one HyperNode's rows."""
    keep = np.zeros(nodes, dtype=bool)
    keep[rows] = True
    if usable.rows is not None:
        keep &= usable.rows
    return Usable(keep, usable.blockers)


def victim_room(nodes: int, size: int, pods: Sequence[tuple[int, Sequence[int]]]) -> IntArray:
    """Per node row, what the (row, request) pods hold there."""
    out = np.zeros((nodes, size), dtype=np.int64)
    for row, req in pods:
        if row >= 0:
            out[row] += np.asarray(req, dtype=np.int64)
    return out


def confine(ask: Ask, clusters: Clusters, hypernodes: HyperNodes) -> Ask:
    """``ask`` for planners that search one domain per cluster (reclaim): a hard-topology gang's
    mask keeps it, on each cluster, to the HyperNode of its allowed tier that could hold it with
    every pod gone and has the most free room for it (no node at all where none could), so their
    victims too free room where the gang then fits."""
    hard, limit = hard_limit(ask.job.snap.network_topology)
    if not hard:
        return ask
    gang, mask = ask.job.gang, ask.mask
    d = np.flatnonzero(gang.total > 0)
    need = gang.total[d]

    def confined(c: int) -> Usable:
        free, alloc = clusters.free(c), clusters.alloc[c]
        best: tuple[float, IntArray] | None = None
        for tier, _, r in hypernodes.rows(c).entries:
            if limit is not None and tier > limit:
                break
            if (alloc[r].sum(axis=0)[d] < need).any():
                continue
            score = float((free[r].clip(min=0).sum(axis=0)[d] / need).min()) if d.size else 0.0
            if best is None or score > best[0]:
                best = (score, r)
        rows = np.zeros(0, dtype=np.int64) if best is None else best[1]
        return within(mask(c), rows, free.shape[0])

    return replace(ask, mask=confined)
