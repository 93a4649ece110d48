"""admit() round after round with its decisions applied at once, for admission tests and trace benches.

The hub's side is the in-memory ``Dispatcher``; the agents' side is a ``Placer``: by default
``FirstFitNodes``, which puts an admitted gang's pods, biggest first, each on the first node (by
name) with room, as a stand-in for the agents where their own scheduler is not what is measured.
``vglobal sim run`` uses the agents' real code instead (``vglobal.sim.federation``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from vglobal.admission import (
    AdmissionPolicy,
    AdmissionResult,
    Admit,
    ClusterSnap,
    Gang,
    PendingJob,
    QueueSnap,
)
from vglobal.admission.inputs import JobFacts
from vglobal.model.resources import ResourceVector
from vglobal.sim.dispatch import Dispatcher, Rules

# One placed pod: (its gang shape's index, its node).
Pod = tuple[int, str]


class Placer(Protocol):
    def clusters(self) -> Iterable[ClusterSnap]:
        """Every cluster with its nodes' free capacity now."""
        ...

    def place(self, cluster: str, gang: Gang) -> list[Pod] | None:
        """Take room for the whole gang on ``cluster``: each pod's shape and node; None = it does
        not fit (and nothing was taken)."""
        ...

    def release(self, cluster: str, gang: Gang, pods: Sequence[Pod]) -> None: ...


class FirstFitNodes:
    def __init__(self, clusters: Sequence[ClusterSnap]) -> None:
        self._clusters = {c.name: c for c in clusters}
        self.free = {c.name: {n.name: n.free for n in c.nodes} for c in clusters}
        self._order = {c.name: sorted(self.free[c.name]) for c in clusters}

    def clusters(self) -> Iterable[ClusterSnap]:
        for name, c in self._clusters.items():
            free = self.free[name]
            nodes = tuple(n if n.free == free[n.name] else replace(n, free=free[n.name]) for n in c.nodes)
            self._clusters[name] = c = replace(c, nodes=nodes)
            yield c

    def place(self, cluster: str, gang: Gang, nominated: Sequence[str] = ()) -> list[Pod] | None:
        """``nominated``: nodes tried before the others (an admission's nominatedNodeName: the
        room freed or claimed for it), as the agents' scheduler does."""
        free = self.free[cluster]
        taken: list[Pod] = []
        shapes = sorted(range(len(gang)), key=lambda i: sorted(gang[i][0].items()), reverse=True)
        order = self._order[cluster]
        if nominated:
            first = [n for n in nominated if n in free]
            order = first + [n for n in order if n not in first]
        for i in shapes:
            pod, count = gang[i]
            for _ in range(count):
                node = next((n for n in order if pod.fits_in(free[n])), None)
                if node is None:
                    self.release(cluster, gang, taken)
                    return None
                free[node] = free[node] - pod
                taken.append((i, node))
        return taken

    def release(self, cluster: str, gang: Gang, pods: Sequence[Pod]) -> None:
        free = self.free[cluster]
        for i, node in pods:
            free[node] = free[node] + gang[i][0]


def facts_of(job: PendingJob) -> JobFacts:
    """A job given as admission's input, taken as stored facts: one task per gang shape (named by
    its index), each pod its shape's request, none of them pinned."""
    return JobFacts(
        uid=job.uid,
        namespace=job.namespace,
        name=job.name,
        queue=job.queue,
        priority=job.priority,
        created=job.created,
        request=job.request,
        gang=job.gang,
        min_request=job.request,
        pod_requests={str(i): vec for i, (vec, _) in enumerate(job.gang)},
        allowed=job.allowed_clusters,
        selector=job.cluster_selector,
        topology=job.network_topology,
        preemption_policy=job.preemption_policy,
        group=job.group,
        workload=job.workload,
        partitions=job.partitions,
        gpu_hints=job.gpu_hints,
        preferred=job.preferred_clusters,
        anti_affinity=job.anti_affinity,
        tasks=job.tasks,
        template_labels=job.task_labels,
    )


def _pods(uid: str, pods: Sequence[Pod]) -> list[dict[str, Any]]:
    """Placed pods as an agent reports them (PodPlacement JSON), with no pod uid: a stand-in
    placer's pods are never victims one by one, their job is."""
    return [
        {"pod": f"{uid}-{i}-{k}", "task": str(i), "node": node, "phase": "Running"}
        for k, (i, node) in enumerate(pods)
    ]


@dataclass
class AdmissionRounds:
    """Each ``step`` is one dispatch cycle at ``now``; admitted jobs are placed at once (a gang the
    placer cannot hold is counted in ``rejected`` and waits on as before), reclaimed jobs stop and
    wait again; ``finish`` ends running jobs."""

    dispatcher: Dispatcher
    placer: Placer
    now: float = 1000.0
    results: list[AdmissionResult] = field(default_factory=list)
    placements: dict[str, list[Pod]] = field(default_factory=dict)
    rejected: int = 0

    @classmethod
    def of(
        cls,
        queues: Sequence[QueueSnap],
        clusters: Sequence[ClusterSnap],
        pending: Sequence[PendingJob] = (),
        *,
        now: float = 1000.0,
        **rules: object,
    ) -> AdmissionRounds:
        """Over first-fit nodes; ``rules`` are AdmissionPolicy or Rules fields (the hub's defaults
        otherwise, except no limit on admissions per cycle)."""
        policy = {k: rules.pop(k) for k in AdmissionPolicy.__dataclass_fields__ if k in rules}
        merged = AdmissionPolicy(**{"max_admissions": 0, **policy})  # type: ignore[arg-type]
        dispatcher = Dispatcher(queues, Rules(merged, **rules))  # type: ignore[arg-type]
        out = cls(dispatcher, FirstFitNodes(clusters), now)
        out.submit(*pending)
        return out

    @property
    def rules(self) -> Rules:
        return self.dispatcher.rules

    def submit(self, *jobs: PendingJob) -> None:
        for job in jobs:
            self.dispatcher.submit(facts_of(job), waiting_since=job.waiting_since)

    def step(self, advance: float = 1.0) -> AdmissionResult:
        d = self.dispatcher
        cycle = d.cycle(self.now, self.placer.clusters())
        # Admissions first: they were decided on the nodes as they are, before any victim stops.
        for a in cycle.admitted:
            decision = cycle.result.decisions.get(a.uid)
            nominated = decision.nominated if isinstance(decision, Admit) else ()
            if nominated and isinstance(self.placer, FirstFitNodes):
                placed = self.placer.place(a.cluster, d.jobs[a.uid].gang, nominated)
            else:
                placed = self.placer.place(a.cluster, d.jobs[a.uid].gang)
            if placed is None:
                self.rejected += 1
                d.withdraw(a.uid)
                continue
            self.placements[a.uid] = placed
            d.report(a.uid, _pods(a.uid, placed), started=True)
        for victim in cycle.reclaimed:
            self._release(victim.uid, victim.cluster)
        self.results.append(cycle.result)
        self.now += advance
        return cycle.result

    def _release(self, uid: str, cluster: str) -> None:
        pods = self.placements.pop(uid, [])
        if pods:
            self.placer.release(cluster, self.dispatcher.jobs[uid].gang, pods)

    def finish(self, *uids: str) -> None:
        for uid in uids:
            job = self.dispatcher.jobs.get(uid)
            run = self.dispatcher.running.get(uid)
            if job is not None and run is not None:
                pods = self.placements.pop(uid, [])
                self.placer.release(run.cluster, job.gang, pods)
            self.dispatcher.finish(uid)

    def usage(self, queue: str) -> ResourceVector:
        return self.dispatcher.allocated(queue)
