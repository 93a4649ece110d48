"""Required pod anti-affinity at the hub (model/pod_anti_affinity.py), both ways, as the predicates
of Kubernetes' InterPodAffinity check it: a running pod that a term of the gang's pods selects, or
whose own term selects one of the gang's pods, closes to the gang every node of that term's
topology domain around it, until it is a victim.

Placement keeps the gang off those nodes (a Held matrix, as for node groups), and the victim
planners see them as ``Usable.blockers``: a node opens once every pod closing it is evicted, so a
preemptor takes the pod its anti-affinity conflicts with, as Volcano's preempt does when its
predicates fail on the node. Pod affinity is left to the agent's predicates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.node_mask import BLOCKED, NodeMask, Usable
from vglobal.admission.fit.nodegroups import NodeGroups
from vglobal.admission.fit.placement import Clusters, Held, HeldRows
from vglobal.admission.snapshot import PendingJob, RunningJob, node_order
from vglobal.model.pod_anti_affinity import AntiTerm, task_pod_labels
from vglobal.model.queue_affinity import QueueAffinity

Blockers = Mapping[int, frozenset[str]]  # node row -> uids of the running pods closing it


@dataclass(frozen=True, slots=True)
class _Placed:
    row: int
    uid: str
    namespace: str
    labels: Mapping[str, str]
    terms: tuple[AntiTerm, ...]  # its own pods' required anti-affinity


class PodAntiAffinity:
    """The running pods of each cluster with their labels, read on first use, and those whose own
    terms may select a gang's pods (few: only jobs written with required anti-affinity)."""

    def __init__(self, running: Sequence[RunningJob], clusters: Clusters) -> None:
        self.clusters = clusters
        self._running = running
        self._placed: dict[int, list[_Placed]] | None = None
        self._cache: dict[tuple[object, ...], Blockers] = {}
        # (namespace, term) of every running pod's own required anti-affinity
        self._terms = {
            (j.namespace, t) for j in running if j.anti_affinity and j.pods for t in j.anti_affinity
        }
        self._selected: dict[str, bool] = {}
        self.running_terms = bool(self._terms)

    def applies(self, job: PendingJob) -> bool:
        """Whether anti-affinity may close nodes to the job: its own terms, or a running pod's
        that selects one of its pods."""
        return bool(job.anti_affinity) or (bool(self._terms) and self.selected(job))

    def selected(self, job: PendingJob) -> bool:
        """Whether a running pod's own term selects one of the job's pods."""
        got = self._selected.get(job.uid)
        if got is None:
            mine = _pod_labels(job)
            got = self._selected[job.uid] = any(
                t.selects(ns, job.namespace, labels) for ns, t in self._terms for labels in mine
            )
        return got

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
                    if row >= 0 and (p.labels or job.anti_affinity):
                        placed = _Placed(row, p.uid, job.namespace, p.labels, job.anti_affinity)
                        self._placed.setdefault(k, []).append(placed)
        return self._placed.get(c, [])

    def blockers(self, job: PendingJob, c: int) -> Blockers:
        """Per node row of cluster c, the running pods that keep the job's pods off it."""
        selected = bool(self._terms) and self.selected(job)
        # a gang selected by running pods' terms has closures of its own; others share by terms
        key: tuple[object, ...] = (job.uid, c) if selected else (job.anti_affinity, job.namespace, c)
        got = self._cache.get(key)
        if got is not None:
            return got
        nodes = sorted(self.clusters.snaps[c].nodes, key=node_order)  # placement's row order
        mine = _pod_labels(job) if selected else []
        out: dict[int, set[str]] = {}
        for pod in self._pods(c):
            closing = [t for t in job.anti_affinity if t.selects(job.namespace, pod.namespace, pod.labels)]
            if pod.terms and mine:  # its own terms against the gang's pods (existing pods' anti-affinity)
                closing += [
                    t for t in pod.terms if any(t.selects(pod.namespace, job.namespace, m) for m in mine)
                ]
            for term in closing:
                value = nodes[pod.row].labels.get(term.topology_key)
                if value is None:
                    continue  # a node without the key is in no domain
                for row, n in enumerate(nodes):
                    if n.labels.get(term.topology_key) == value:
                        out.setdefault(row, set()).add(pod.uid)
        got = self._cache[key] = {r: frozenset(u) for r, u in out.items()}
        return got

    def candidates(self, cand: Candidates, job: PendingJob) -> Candidates:
        """The same clusters under a key of their own: a gang kept off some nodes by anti-affinity may
        fail where the same gang without it fits, and the failure cache must not mix them up."""
        tag = (
            job.uid.encode() if bool(self._terms) and self.selected(job) else repr(job.anti_affinity).encode()
        )
        note = "pod anti-affinity keeps its pods off nodes where pods it conflicts with run"
        return Candidates(
            cand.array,
            cand.ids,
            cand.key + b"|anti|" + tag,
            f"{cand.note}; {note}" if cand.note else note,
            cand.spread,
            cand.keep_accel,
        )

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
            out[c] = HeldRows(matrix)
        return out


def _pod_labels(job: PendingJob) -> list[dict[str, str]]:
    """The labels of each of the job's tasks' pods on its cluster (the per-pod index aside)."""
    return [task_pod_labels(job.name, job.namespace, t, job.task_labels.get(t)) for t in job.tasks]


def job_mask(
    job: PendingJob, affinity: QueueAffinity | None, groups: NodeGroups, anti: PodAntiAffinity
) -> NodeMask:
    """Per cluster, the nodes a victim planner may free for the job: its queue's node groups, less
    those its pods' anti-affinity closes while the pods closing them stay."""

    def mask(c: int) -> Usable:
        rows = None if affinity is None else groups.allowed(affinity, c)
        return Usable(rows, anti.blockers(job, c) if anti.applies(job) else {})

    return mask
