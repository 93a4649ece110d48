"""The cluster fit of one job's gang, as a lone job and a HyperJob's child both take it.

In order: its queue's node groups (nodegroups.py) hold the other nodes away; a gang that asks for
vGPUs is packed onto the reported cards (devices.py); a gang with partitions goes to HyperNodes of
their tiers within one of the job's tier (partitions.py); a job-level network topology asks for one
HyperNode (topology.py); else the plain gang fit (placement.py). One implementation, so a child
placed by a HyperJob's decision can be placed in its cluster exactly as a lone job could.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from vglobal.admission.devices import DeviceFit, needs_cards
from vglobal.admission.explain import no_hypernode_reason, no_partition_fit_reason
from vglobal.admission.partitions import place_partitioned, prepare_partitions
from vglobal.admission.placement import Candidates, Held, Placement
from vglobal.admission.prepare import Job, Prepared
from vglobal.admission.topology import HyperNodeRows, place


def subset(cand: Candidates, ids: Sequence[int]) -> Candidates:
    """The candidates among ``cand`` with these ids (in index order); its own key, since caches
    keyed by candidates hold what a ranking or a failure of exactly these clusters was."""
    keep = set(ids)
    chosen = [c for c in cand.ids if c in keep]
    arr = np.array(chosen, dtype=np.int64)
    return Candidates(arr, tuple(chosen), arr.tobytes() + b"|" + cand.key, cand.note)


class GangFit:
    """Places gangs on the cycle's clusters, committing what it places (the caller charges)."""

    def __init__(self, prep: Prepared) -> None:
        self.prep = prep
        self.clusters = prep.clusters
        self.hypernode_rows: dict[int, HyperNodeRows] = {}  # per cluster, built on first use
        self.devices = DeviceFit(self.clusters, prep.index)
        self.card_misfit: dict[str, str] = {}  # job uid -> why its vGPUs fit no cluster's cards

    def place(self, job: Job, cand: Candidates, held: Mapping[int, Held]) -> tuple[int, Placement] | None:
        """The cluster among ``cand`` the job's gang went to, and how; None if none holds it.
        ``held`` is capacity kept away from it (a starvation reservation)."""
        clusters = self.clusters
        if job.affinity is not None:
            held = self.prep.nodegroups.held(job.affinity, cand, held)
        if self.devices.active and needs_cards(job.snap):
            got = self.devices.place(clusters, cand, job.gang, held, job.snap)  # commits itself
            if isinstance(got, str):
                if got:  # the first answer: a child tries the clusters its siblings hold after
                    self.card_misfit.setdefault(job.snap.uid, got)
                return None
            return got
        if job.snap.partitions:
            prepared = prepare_partitions(job.snap, self.prep.index, self.prep.scale)
            found = place_partitioned(clusters, self.hypernode_rows, cand, job.gang, held, job.snap, prepared)
        else:
            found = place(clusters, self.hypernode_rows, cand, job.gang, held, job.snap.network_topology)
        if found is None:
            return None
        c, placement = found
        clusters.commit(c, placement, job.gang)
        return c, placement

    def why_not(self, job: Job, cand: Candidates) -> tuple[str, bool]:
        """Why the gang fits none of ``cand``, and whether that is the plain gang fit's answer (a
        failure cache may keep it for bigger gangs; a card, partition or HyperNode answer is the
        job's own)."""
        if job.affinity is None:
            best = self.clusters.best_effort(cand, job.gang)
        else:
            best = self.prep.nodegroups.best_effort(cand, job.gang, job.affinity)
        topo = job.snap.network_topology
        card_misfit = self.card_misfit.get(job.snap.uid)
        if card_misfit:
            return card_misfit, False  # the totals may hold the gang; its cards do not
        if job.snap.partitions:  # every partition must also fit one HyperNode
            return no_partition_fit_reason(job.snap.partitions, topo, best), False
        if topo is not None and topo[0] == "hard":
            return no_hypernode_reason(topo[1], best), False
        return best, True
