"""The scheduler's view of this cluster: backend nodes plus every unfinished run's pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.agent.run import JobRun
from vglobal.scheduler.api import ClusterState, JobSpec, NodeSpec, QueueSpec, TaskSpec, TaskStatus


def _task_status(status: PodStatus, pipelined: str | None) -> tuple[TaskStatus, str | None]:
    if status.phase == PodPhase.Running:
        return TaskStatus.Running, status.node
    if status.phase == PodPhase.Succeeded:
        return TaskStatus.Succeeded, status.node
    if status.phase == PodPhase.Failed:
        return TaskStatus.Failed, status.node
    if status.node is not None:
        return TaskStatus.Bound, status.node
    if pipelined is not None:
        return TaskStatus.Pipelined, pipelined
    return TaskStatus.Pending, None


def _host_ports(spec: Mapping[str, Any]) -> tuple[int, ...]:
    ports = []
    for c in spec.get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                ports.append(int(p["hostPort"]))
    return tuple(ports)


def task_spec(run: JobRun, pod: PodManifest, status: PodStatus) -> TaskSpec:
    spec = pod.obj.get("spec") or {}
    state, node = _task_status(status, run.pipelined.get(pod.uid))
    return TaskSpec(
        uid=pod.uid,
        name=pod.name,
        job_uid=run.uid,
        role=pod.task,
        index=pod.index,
        request=pod.request,
        status=state,
        node=node,
        priority=run.priority,
        node_selector=dict(spec.get("nodeSelector") or {}),
        affinity=spec.get("affinity"),
        tolerations=tuple(spec.get("tolerations") or ()),
        host_ports=_host_ports(spec),
        annotations=pod.annotations,
        namespace=pod.namespace,
        creation=pod.index,
        priority_class=str(spec.get("priorityClassName") or ""),
    )


def job_spec(run: JobRun) -> JobSpec:
    job = run.job
    tasks = tuple(task_spec(run, pod, run.status[name]) for name, pod in sorted(run.pods.items()))
    topology = None
    if job.network_topology is not None and job.network_topology.highest_tier_allowed is not None:
        topology = (job.network_topology.mode, job.network_topology.highest_tier_allowed)
    return JobSpec(
        uid=run.uid,
        name=job.name,
        namespace=job.namespace,
        queue=run.queue,
        priority=run.priority,
        min_available=job.min_available,
        task_min_available={t.name: t.min_available for t in job.tasks},
        creation=run.seq,
        tasks=tasks,
        podgroup_phase=run.podgroup_phase,
        network_topology=topology,
        annotations=dict(job.annotations),
    )


def cluster_state(nodes: tuple[NodeSpec, ...], runs: Iterable[JobRun]) -> ClusterState:
    """Quotas were enforced by the hub: every queue here is an open, unlimited local queue."""
    active = [r for r in runs if not r.finished]
    jobs = tuple(job_spec(r) for r in sorted(active, key=lambda r: r.seq))
    queues = tuple(QueueSpec(name=q) for q in sorted({r.queue for r in active}))
    return ClusterState(nodes=nodes, jobs=jobs, queues=queues)
