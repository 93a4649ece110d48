"""Builders for admission tests: resource vectors, clusters of equal nodes, pending jobs, and the
readers of an AdmissionResult. Rounds of admission are driven by ``vglobal.sim.rounds``."""

from __future__ import annotations

from vglobal.admission import (
    AdmissionResult,
    Admit,
    ClusterSnap,
    NodeSnap,
    PendingJob,
    Wait,
)
from vglobal.model.resources import ResourceVector

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
