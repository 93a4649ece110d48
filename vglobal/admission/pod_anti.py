"""Required pod anti-affinity of a gang's pods at the hub (model/pod_anti_affinity.py): a running pod
a term selects closes to the gang every node of its topology domain, until it is a victim.

Placement keeps the gang off those nodes (a Held matrix, as for node groups), and the victim
planners see them as ``Usable.blockers``: a node opens once every pod closing it is evicted, so a
preemptor takes the pod its anti-affinity conflicts with, as Volcano's preempt does when its
predicates fail on the node. The agent's predicates check the rest (terms of running pods that
select the gang's pods, pod affinity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.index import IntArray
from vglobal.admission.node_mask import BLOCKED, NodeMask, Usable
from vglobal.admission.nodegroups import NodeGroups
from vglobal.admission.placement import Candidates, Clusters, Held
from vglobal.admission.snapshot import PendingJob, RunningJob
from vglobal.model.pod_anti_affinity import AntiTerm
from vglobal.model.queue_affinity import QueueAffinity

Blockers = Mapping[int, frozenset[str]]  # node row -> uids of the running pods closing it


@dataclass(frozen=True, slots=True)
class _Placed:
    row: int
    uid: str
    namespace: str
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class _Kept:
    matrix: IntArray


class PodAntiAffinity:
    """The running pods of each cluster with their labels, read on first use."""

    def __init__(self, running: Sequence[RunningJob], clusters: Clusters) -> None:
        self.clusters = clusters
        self._running = running
        self._placed: dict[int, list[_Placed]] | None = None
        self._cache: dict[tuple[tuple[AntiTerm, ...], str, int], Blockers] = {}

    def _pods(self, c: int) -> list[_Placed]:
        if self._placed is None:
            self._placed = {}
            col, node_col = self.clusters.col, self.clusters.node_col
            for job in self._running:
                k = col.get(job.cluster)
                if k is None:
                    continue
                for p in job.pods:
                    row = node_col[k].get(p.node, -1)
                    if row >= 0 and p.labels:
                        self._placed.setdefault(k, []).append(_Placed(row, p.uid, job.namespace, p.labels))
        return self._placed.get(c, [])

    def blockers(self, job: PendingJob, c: int) -> Blockers:
        """Per node row of cluster c, the running pods that keep the job's pods off it."""
        key = (job.anti_affinity, job.namespace, c)
        got = self._cache.get(key)
        if got is not None:
            return got
        nodes = sorted(self.clusters.snaps[c].nodes, key=lambda n: n.name)  # placement's row order
        out: dict[int, set[str]] = {}
        for pod in self._pods(c):
            for term in job.anti_affinity:
                value = nodes[pod.row].labels.get(term.topology_key)
                if value is None or not term.selects(job.namespace, pod.namespace, pod.labels):
                    continue  # a node without the key is in no domain
                for row, n in enumerate(nodes):
                    if n.labels.get(term.topology_key) == value:
                        out.setdefault(row, set()).add(pod.uid)
        got = self._cache[key] = {r: frozenset(u) for r, u in out.items()}
        return got

    def held(self, job: PendingJob, cand: Candidates, base: Mapping[int, Held]) -> dict[int, Held]:
        """``base`` (node groups, a starvation reservation) plus the closed nodes held whole."""
        out = dict(base)
        for c in cand.ids:
            rows = list(self.blockers(job, c))
            if not rows:
                continue
            kept = base.get(c)
            matrix = np.zeros_like(self.clusters.free(c)) if kept is None else np.array(kept.matrix)
            matrix[rows] = BLOCKED
            out[c] = _Kept(matrix)
        return out


def job_mask(
    job: PendingJob, affinity: QueueAffinity | None, groups: NodeGroups, anti: PodAntiAffinity
) -> NodeMask:
    """Per cluster, the nodes a victim planner may free for the job: its queue's node groups, less
    those its pods' anti-affinity closes while the pods closing them stay."""

    def mask(c: int) -> Usable:
        rows = None if affinity is None else groups.allowed(affinity, c)
        return Usable(rows, anti.blockers(job, c) if job.anti_affinity else {})

    return mask


def anti_candidates(cand: Candidates, terms: tuple[AntiTerm, ...]) -> Candidates:
    """The same clusters under a key of their own: a gang kept off some nodes by anti-affinity may
    fail where the same gang without it fits, and the failure cache must not mix them up."""
    tag = repr(terms).encode()
    note = "its pods' required anti-affinity keeps them off nodes where pods it selects run"
    return Candidates(
        cand.array, cand.ids, cand.key + b"|anti|" + tag, f"{cand.note}; {note}" if cand.note else note
    )
