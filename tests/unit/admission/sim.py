"""A tiny multi-round driver for admission tests: apply admit()'s decisions and run the next cycle.

Admitted gangs are placed onto nodes first-fit (pods biggest first) as an agent would, reclaimed
jobs go back to pending keeping their creation time, and finished jobs release their nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vglobal.admission import (
    AdmissionResult,
    Admit,
    ClusterSnap,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
    Wait,
)
from vglobal.model.resources import EMPTY, ResourceVector

GPU = "nvidia.com/gpu"


def gpus(n: float) -> ResourceVector:
    return ResourceVector({GPU: int(n * 1000)})


def res(cpu: float = 0, gpu: float = 0, mem_gi: int = 0) -> ResourceVector:
    return ResourceVector({"cpu": int(cpu * 1000), GPU: int(gpu * 1000), "memory": mem_gi * 2**30})


def cluster(
    name: str,
    nodes: int,
    per_node: ResourceVector,
    labels: dict[str, str] | None = None,
    schedulable: bool = True,
) -> ClusterSnap:
    return ClusterSnap(
        name,
        labels or {},
        tuple(NodeSnap(f"{name}-n{i:02d}", per_node, per_node) for i in range(nodes)),
        schedulable,
    )


def job(
    uid: str,
    queue: str,
    pod: ResourceVector,
    pods: int = 1,
    *,
    priority: int = 0,
    created: float = 0.0,
    waiting_since: float | None = None,
    **placement: object,
) -> PendingJob:
    return PendingJob(
        uid=uid,
        name=uid,
        namespace="ns",
        queue=queue,
        priority=priority,
        created=created,
        waiting_since=created if waiting_since is None else waiting_since,
        request=pod.scale(pods),
        gang=((pod, pods),),
        **placement,  # type: ignore[arg-type]
    )


def jobs(
    prefix: str, queue: str, pod: ResourceVector, count: int, pods: int = 1, **kw: object
) -> list[PendingJob]:
    return [job(f"{prefix}{k:02d}", queue, pod, pods, created=float(k), **kw) for k in range(count)]  # type: ignore[arg-type]


def admitted(result: AdmissionResult) -> dict[str, str]:
    return {uid: d.cluster for uid, d in result.decisions.items() if isinstance(d, Admit)}


def reason(result: AdmissionResult, uid: str) -> str:
    d = result.decisions[uid]
    assert isinstance(d, Wait), f"{uid} was admitted to {d}"
    return d.reason


@dataclass
class Sim:
    queues: list[QueueSnap]
    clusters: list[ClusterSnap]
    pending: list[PendingJob] = field(default_factory=list)
    running: dict[str, RunningJob] = field(default_factory=dict)
    now: float = 1000.0
    placement: str = "binpack"
    starvation_after: float = 600.0
    reclaim_after: float = 0.0
    reclaim_min_runtime: float = 0.0
    max_admissions: int = 0
    free: dict[str, dict[str, ResourceVector]] = field(default_factory=dict)
    results: list[AdmissionResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        for c in self.clusters:
            self.free[c.name] = {n.name: n.free for n in c.nodes}

    def snapshot(self) -> Snapshot:
        usage: dict[str, ResourceVector] = {}
        for r in self.running.values():
            usage[r.queue] = usage.get(r.queue, EMPTY) + r.request
        queues = tuple(replace(q, allocated=usage.get(q.name, EMPTY)) for q in self.queues)
        clusters = tuple(
            replace(c, nodes=tuple(replace(n, free=self.free[c.name][n.name]) for n in c.nodes))
            for c in self.clusters
        )
        return Snapshot(
            self.now,
            queues,
            clusters,
            tuple(self.pending),
            tuple(self.running.values()),
            self.placement,
            self.starvation_after,
            self.reclaim_after,
            reclaim_min_runtime=self.reclaim_min_runtime,
            max_admissions=self.max_admissions,
        )

    def place(self, j: PendingJob, cluster: str) -> RunningJob:
        free = self.free[cluster]
        placements: dict[str, ResourceVector] = {}
        pods = sorted(((vec, n) for vec, n in j.gang), key=lambda s: sorted(s[0].items()), reverse=True)
        for vec, n in pods:
            for _ in range(n):
                node = next(name for name in sorted(free) if vec.fits_in(free[name]))
                free[node] = free[node] - vec
                placements[node] = placements.get(node, EMPTY) + vec
        return RunningJob(
            j.uid, j.queue, cluster, j.priority, j.created, j.request, placements, running_since=self.now
        )

    def step(self, advance: float = 1.0) -> AdmissionResult:
        from vglobal.admission import admit

        result = admit(self.snapshot())
        self.results.append(result)
        by_uid = {j.uid: j for j in self.pending}
        for uid in result.admitted_order:
            d = result.decisions[uid]
            assert isinstance(d, Admit)
            self.running[uid] = self.place(by_uid[uid], d.cluster)
        for rc in result.reclaims:
            victim = self.running.pop(rc.victim_uid)
            self._release(victim)
            self.pending.append(
                PendingJob(
                    victim.uid,
                    victim.uid,
                    "ns",
                    victim.queue,
                    victim.priority,
                    victim.created,
                    self.now,
                    victim.request,
                    tuple((v, 1) for v in victim.placements.values()),
                )
            )
        self.pending = [j for j in self.pending if j.uid not in result.admitted_order]
        self.now += advance
        return result

    def finish(self, *uids: str) -> None:
        for uid in uids:
            self._release(self.running.pop(uid))

    def _release(self, r: RunningJob) -> None:
        for node, vec in r.placements.items():
            self.free[r.cluster][node] = self.free[r.cluster][node] + vec

    def usage(self, queue: str) -> ResourceVector:
        return sum((r.request for r in self.running.values() if r.queue == queue), EMPTY)
