"""Cluster fit for a gang with partitions, so a job dispatched to a cluster can be placed there.

The local scheduler places such a job inside one HyperNode of tier <= the job's highest allowed
tier (the whole cluster without a topology) and each partition whole inside one HyperNode of tier
<= the partition's tier *within* that one. Here, for each candidate cluster and each job domain in
(tier, name) order, the partitions (larger first) are searched over the sub-HyperNodes their tier
allows, backtracking, then the gang's other pods go into what is left of the domain. The cluster whose
domain has the lowest tier wins (a lower tier is a closer network); the whole cluster ranks last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.fit.gang import Shape, pack, prepare_gang
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.packer import Packer
from vglobal.admission.fit.placement import Held, Placement
from vglobal.admission.fit.topology import HyperNodeRows, HyperNodes
from vglobal.admission.prepare import Job
from vglobal.admission.snapshot import Gang, Partitions, PendingJob
from vglobal.model.forms import PartitionGang

WHOLE = 1 << 30  # the tier the whole cluster ranks at, above every HyperNode's
# packs a partition search may spend past its first descent (a few HyperNodes per partition of a
# few partitions are searched whole; beyond, the ordered first-fit's answer stands)
SEARCH_BUDGET = 64


@dataclass(frozen=True, slots=True)
class PreparedPartitions:
    shape: Shape  # the pods of ONE partition
    count: int
    constrained: bool  # has a network topology (else: anywhere in the job's domain)
    highest_tier: int | None  # None: any tier (a tier name the hub cannot map)
    hard: bool


@dataclass(frozen=True, slots=True)
class PartitionedGang:
    parts: tuple[PreparedPartitions, ...]
    rest: tuple[Shape, ...]  # the gang's pods outside the partitions


def partitions_of(gangs: Sequence[PartitionGang]) -> tuple[Partitions, ...]:
    """Admission's form of a stored placement's partitions."""
    return tuple(
        Partitions(
            g.request,
            g.size,
            g.count,
            None if g.topology is None else (g.topology.mode, g.topology.highest_tier_allowed),
        )
        for g in gangs
    )


def _rest(gang: Gang, partitions: Sequence[Partitions]) -> Gang:
    """The gang without the partitions' pods (they are counted in it by shape)."""
    left: dict[object, int] = {}
    for vec, n in gang:
        left[vec] = left.get(vec, 0) + n
    for p in partitions:
        left[p.request] = left.get(p.request, 0) - p.size * p.count
    out = []
    for vec, n in gang:
        take = min(n, left.get(vec, 0))
        if take > 0:
            out.append((vec, take))
            left[vec] = left.get(vec, 0) - take
    return tuple(out)


def prepare_partitions(job: PendingJob, index: ResourceIndex, scale: IntArray) -> PartitionedGang:
    parts = []
    for p in job.partitions:
        (shape,) = prepare_gang(((p.request, p.size),), index, scale).shapes
        topo = p.network_topology
        parts.append(
            PreparedPartitions(
                shape,
                p.count,
                constrained=topo is not None,
                highest_tier=None if topo is None else topo[1],
                hard=topo is not None and topo[0] == "hard",
            )
        )
    rest = prepare_gang(_rest(job.gang, job.partitions), index, scale).shapes
    return PartitionedGang(tuple(parts), rest)


def _inside(
    entries: Sequence[tuple[int, str, IntArray]], domain: IntArray
) -> list[tuple[int, str, IntArray]]:
    members = set(domain.tolist())
    return [e for e in entries if members.issuperset(e[2].tolist())]


def _units(
    gang: PartitionedGang, domain: IntArray, subs: Sequence[tuple[int, str, IntArray]]
) -> list[tuple[PreparedPartitions, list[IntArray], int]]:
    """One entry per partition to place: (its group, the rows it may take in order, the group's
    index), larger partitions first (more pods, then larger pods; Volcano's SubJobOrderFn sees
    equal readiness and priority here), a group's partitions side by side."""
    out: list[tuple[PreparedPartitions, list[IntArray], int]] = []
    for k, part in enumerate(gang.parts):
        allowed = [domain]  # without a topology: anywhere in the job's domain
        if part.constrained:
            allowed = [
                rows for tier, _, rows in subs if part.highest_tier is None or tier <= part.highest_tier
            ]
            if not part.hard:
                allowed.append(domain)  # soft: the job's domain is the fallback
        out += [(part, allowed, k)] * part.count
    out.sort(key=lambda u: (-u[0].shape.count, -int(u[0].shape.row.sum()), u[2]))
    return out


def fit_domain(
    free: IntArray,
    domain: IntArray,
    subs: Sequence[tuple[int, str, IntArray]],
    gang: PartitionedGang,
    packer: Packer | None = None,
) -> IntArray | None:
    """``free`` after placing every partition in a sub-HyperNode of ``domain`` (rows) its tier
    allows and the rest of the gang in the domain; None if something does not fit. A ``packer``
    (started on the cluster by the caller) packs instead of ``pack`` (the GPU cards fit too).

    A backtracking search over each partition's HyperNodes, so whether the gang fits does not hang
    on the order of its tasks; its first descent is the ordered first-fit, and after SEARCH_BUDGET
    more packs it gives up (the answer first-fit would give)."""
    units = _units(gang, domain, subs)
    work = free.copy()
    budget = [SEARCH_BUDGET + len(units) + 1]

    def packed(rows: IntArray, shapes: Sequence[Shape]) -> IntArray | None:
        budget[0] -= 1
        return pack(work[rows], shapes)[1] if packer is None else packer(work[rows], rows, shapes)

    def place(i: int, low: int) -> bool:
        if i == len(units):
            if not gang.rest:
                return True
            sub = packed(domain, gang.rest)
            if sub is None:
                return False
            work[domain] = sub
            return True
        part, allowed, k = units[i]
        # partitions of one group are alike: their choices need only be tried in one order
        start = low if i > 0 and units[i - 1][2] == k else 0
        for j in range(start, len(allowed)):
            if budget[0] <= 0:
                return False
            rows = allowed[j]
            mark = None if packer is None else packer.save()
            sub = packed(rows, (part.shape,))
            if sub is None:
                continue
            before = work[rows]
            work[rows] = sub
            if place(i + 1, j):
                return True
            work[rows] = before
            if packer is not None:
                packer.restore(mark)
        return False

    return work if place(0, 0) else None


def _domains(
    rows: HyperNodeRows, size: int, topology: tuple[str, int | None] | None
) -> list[tuple[int, IntArray]]:
    """The job's candidate domains as (tier, rows), in (tier, name) order."""
    whole = (WHOLE, np.arange(size, dtype=np.int64))
    if topology is None:
        return [whole]
    mode, limit = topology
    out = [(tier, r) for tier, _, r in rows.entries if limit is None or tier <= limit]
    if mode != "hard":
        out.append(whole)
    return out


def place_partitioned(
    hypernodes: HyperNodes,
    job: Job,
    held: Mapping[int, Held],
    prepared: PartitionedGang,
    packer: Packer | None = None,
) -> tuple[int, Placement] | None:
    """Where the partitioned gang goes now and how (committing is the caller's), or None."""
    best: tuple[int, int, IntArray] | None = None
    clusters = hypernodes.clusters
    for c in clusters.ranked(job.cand, job.gang):
        rows = hypernodes.rows(c)
        hold = held.get(c)
        kept = None if hold is None else hold.matrix
        current = clusters.free(c)
        free = current if kept is None else np.maximum(current - kept, 0)
        for tier, domain in _domains(rows, free.shape[0], job.snap.network_topology):
            if best is not None and tier >= best[0]:
                break
            if packer is not None:
                packer.start(c)
            after = fit_domain(free, domain, _inside(rows.entries, domain), prepared, packer)
            if after is not None:
                best = (tier, c, after if kept is None else current - (free - after))
                break
    if best is None:
        return None
    if packer is not None:
        packer.choose(best[1])  # its cards, not those of a cluster tried after it
    return best[1], clusters.placement_from(best[1], best[2])
