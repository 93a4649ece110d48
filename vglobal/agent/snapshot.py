"""The scheduler's view of this cluster: backend nodes plus every unfinished run's pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from vglobal import convert
from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.agent.run import JobRun
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.model.hypernode import ResolvedHyperNode, tier_of_name
from vglobal.model.network_topology import NetworkTopology
from vglobal.model.queue_affinity import NODE_GROUP_LIMITS
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import (
    ClusterSnapshot,
    Grant,
    JobSpec,
    NodeSpec,
    QueueSpec,
    SubGroupSpec,
    TaskSpec,
    TaskStatus,
)
from vglobal.scheduler.info import PREEMPTABLE_ANNOTATION, preemptable_flag

_NONE: Mapping[str, tuple[str, tuple[Grant, ...]]] = {}


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


def _label_preemptable(pod: PodManifest) -> bool:
    """Volcano reads ``volcano.sh/preemptable`` from the pod's labels when no annotation sets it
    (the scheduler applies the annotation over this)."""
    labels = (pod.obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(PREEMPTABLE_ANNOTATION)
    return True if value is None else preemptable_flag(str(value))


def task_spec(
    run: JobRun,
    pod: PodManifest,
    status: PodStatus,
    grants: Mapping[str, tuple[str, tuple[Grant, ...]]] = _NONE,
) -> TaskSpec:
    """``grants``: pod uid -> (node, the GPUs it was bound with)."""
    spec = pod.obj.get("spec") or {}
    state, node = _task_status(status, run.pipelined.get(pod.uid))
    held = grants.get(pod.uid)
    return TaskSpec(
        uid=pod.uid,
        name=pod.name,
        job_uid=run.uid,
        role=pod.task,
        index=pod.index,
        request=pod.request,
        status=state,
        node=node,
        priority=run.task_priorities.get(pod.task, run.priority),
        node_selector=dict(spec.get("nodeSelector") or {}),
        affinity=spec.get("affinity"),
        tolerations=tuple(spec.get("tolerations") or ()),
        host_ports=_host_ports(spec),
        annotations=pod.annotations,
        namespace=pod.namespace,
        creation=pod.index,
        priority_class=str(spec.get("priorityClassName") or ""),
        preemptable=_label_preemptable(pod),
        labels=dict((pod.obj.get("metadata") or {}).get("labels") or {}),
        devices=held[1] if held is not None and held[0] == node else (),
    )


def resolve_topology(
    topo: NetworkTopology | None, hyper_nodes: tuple[ResolvedHyperNode, ...]
) -> tuple[str, int] | None:
    """(mode, highest tier allowed): a tier name maps through this cluster's tree (unknown = -1, so a
    hard job fits no HyperNode); neither tier nor name allows up to the synthetic top tier."""
    if topo is None:
        return None
    if topo.highest_tier_allowed is not None:
        return (topo.mode, topo.highest_tier_allowed)
    if topo.highest_tier_name is not None:
        tier = tier_of_name(hyper_nodes, topo.highest_tier_name)
        return (topo.mode, -1 if tier is None else tier)
    return (topo.mode, max((h.tier for h in hyper_nodes), default=0) + 1)


def topology_tier(run: JobRun, hyper_nodes: tuple[ResolvedHyperNode, ...]) -> tuple[str, int] | None:
    return resolve_topology(run.job.network_topology, hyper_nodes)


def sub_groups(run: JobRun, hyper_nodes: tuple[ResolvedHyperNode, ...]) -> tuple[SubGroupSpec, ...]:
    """The PodGroup's subGroupPolicy (one per partitioned task), topologies resolved on this cluster."""
    return tuple(
        SubGroupSpec(
            name=p.name,
            size=p.sub_group_size,
            min_groups=p.min_sub_groups,
            match_labels=dict(p.match_labels),
            match_label_keys=p.match_label_keys,
            network_topology=resolve_topology(p.network_topology, hyper_nodes),
        )
        for p in run.job.sub_group_policies()
    )


def job_spec(
    run: JobRun,
    hyper_nodes: tuple[ResolvedHyperNode, ...] = (),
    held: Iterable[str] = (),
    grants: Mapping[str, tuple[str, tuple[Grant, ...]]] = _NONE,
) -> JobSpec:
    """`held`: names of pods left out (replacements of evicted pods that wait, see JobRun.held);
    `grants`: the GPUs pods were bound with."""
    job = run.job
    skip = set(held)
    tasks = tuple(
        task_spec(run, pod, run.status[name], grants)
        for name, pod in sorted(run.pods.items())
        if name not in skip or run.status[name].node
    )
    topology = topology_tier(run, hyper_nodes)
    return JobSpec(
        uid=run.uid,
        name=job.name,
        namespace=job.namespace,
        queue=run.queue,
        priority=run.priority,
        preemption_policy=run.preemption_policy,
        min_available=job.min_available,
        task_min_available={t.name: t.min_available for t in job.tasks},
        creation=run.seq,
        tasks=tasks,
        podgroup_phase=run.podgroup_phase,
        network_topology=topology,
        annotations=dict(job.annotations),
        sub_groups=sub_groups(run, hyper_nodes),
        nominated_nodes=run.nominated,
    )


def cluster_snapshot(
    nodes: tuple[NodeSpec, ...],
    runs: Iterable[JobRun],
    hyper_nodes: tuple[ResolvedHyperNode, ...] = (),
    reserved: Mapping[str, ResourceVector] | None = None,
    grants: Mapping[str, tuple[str, tuple[Grant, ...]]] = _NONE,
) -> ClusterSnapshot:
    """Every queue here is an open local queue with the weight, parent, affinity and limits its
    runs' latest dispatch gave. What other pods hold on a node
    (``reserved``) is taken off its allocatable; a pod on a node holds the GPUs it was bound with
    (``grants``: pod uid -> (node, GPUs))."""
    if reserved:
        nodes = tuple(
            replace(n, allocatable=n.allocatable - reserved[n.name]) if n.name in reserved else n
            for n in nodes
        )
    active = [r for r in runs if not r.finished]
    short = {r.uid for r in active if _gang_short(r)}
    for r in active:
        if r.held and not short - {r.uid}:
            r.held.clear()  # every other gang is placed: the evicted pods' replacements may go
    ordered = sorted(active, key=lambda r: r.seq)
    jobs = tuple(job_spec(r, hyper_nodes, r.held, grants) for r in ordered)
    known: dict[str, QueueSpec] = {}
    for r in ordered:  # the latest dispatch's view of a queue wins
        known.update((q.name, q) for q in r.queues)
        known.setdefault(r.queue, QueueSpec(name=r.queue))
    queues = tuple(known[name] for name in sorted(known))
    return ClusterSnapshot(nodes=nodes, jobs=jobs, queues=queues, hyper_nodes=hyper_nodes)


def dispatch_queue_specs(queues: Iterable[pb.DispatchQueue]) -> tuple[QueueSpec, ...]:
    """The queues a Dispatch carries as local queues: open, with their place in the tree,
    node-group affinity, the annotation limiting what they hold per node group, and the hub's
    capability, guarantee and deserved less what the queue holds on the other clusters (none
    from a hub that sends none: unlimited)."""
    out = []
    for q in queues:
        affinity = convert.queue_affinity_of(q.affinity) if q.HasField("affinity") else None
        limits = q.node_group_resource_limits
        elsewhere = q.elsewhere.values
        out.append(
            QueueSpec(
                name=q.name,
                parent=q.parent or "root",
                weight=max(q.weight, 1),
                affinity=None if affinity is None else affinity.to_manifest(),
                annotations={NODE_GROUP_LIMITS: limits} if limits else {},
                capability=_capability(q) if q.HasField("capability") else None,
                deserved=_here(q.deserved.values, elsewhere, 0) if q.HasField("deserved") else None,
                guarantee=_here(q.guarantee.values, elsewhere, 0),
                federated=q.HasField("capability"),
            )
        )
    return tuple(out)


def _capability(q: pb.DispatchQueue) -> ResourceVector:
    """The queue's capability on this cluster: what it holds here and the room the hub gave this
    cluster beyond gangs (with an older hub: the capability less what it holds elsewhere)."""
    left = _here(q.capability.values, q.elsewhere.values, 1)
    if not q.HasField("allowance"):
        return left
    here, given = q.here.values, q.allowance.values
    return ResourceVector({r: max(min(here.get(r, 0) + given.get(r, 0), v), 1) for r, v in left.items()})


def _here(limit: Mapping[str, int], elsewhere: Mapping[str, int], least: int) -> ResourceVector:
    """What is left of a queue's limit on this cluster, per resource it names. A capability keeps
    at least 1 unit (``least``): Volcano reads a cpu or memory capability of 0 as unlimited, and
    1 millicore or byte holds no pod that asks for any."""
    return ResourceVector({r: max(v - elsewhere.get(r, 0), least) for r, v in limit.items()})


def _gang_short(run: JobRun) -> bool:
    """Whether fewer of the run's pods are placed than its gang needs (at least one)."""
    placed = sum(1 for st in run.status.values() if st.node)
    return bool(run.pods) and placed < max(run.job.min_available, 1)
