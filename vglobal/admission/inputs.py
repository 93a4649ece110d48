"""Admission's input from what is stored: a job's static facts and its binding as the PendingJob or
RunningJob admission reads, and a cluster's reported inventory as its ClusterSnap.

The hub's dispatch cache and the simulator build their snapshots here, so both hand admission the
same jobs and clusters for the same facts. Pure: the caller reads the rows and passes ``now``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from vglobal.admission.fit.partitions import partitions_of
from vglobal.admission.snapshot import (
    PROVISIONABLE,
    Claim,
    ClusterSnap,
    Gang,
    GroupRef,
    HyperNodeSnap,
    NodeSnap,
    Partitions,
    PendingJob,
    RunningJob,
    RunningPod,
)
from vglobal.model.cards import CardFree
from vglobal.model.forms import FINISHED_POD_PHASES, Member, PodPlacement
from vglobal.model.forms import Placement as StoredPlacement
from vglobal.model.placement_prefs import NO_PREFS, PlacementPrefs
from vglobal.model.pod_anti_affinity import AntiTerm, task_pod_labels
from vglobal.model.resources import ResourceVector
from vglobal.model.served import GROUPED

_BLOCKING_TAINTS = ("NoSchedule", "NoExecute")
_NO_NODES: Mapping[str, ResourceVector] = {}


@dataclass
class Shared:
    """One object per distinct request vector and gang: jobs repeat a few shapes, and admission
    tells equal inputs apart by identity first (cheaper than comparing values)."""

    vectors: dict[ResourceVector, ResourceVector] = field(default_factory=dict)
    gangs: dict[Gang, Gang] = field(default_factory=dict)

    def vector(self, v: ResourceVector) -> ResourceVector:
        return self.vectors.setdefault(v, v)

    def gang(self, g: Gang) -> Gang:
        return self.gangs.setdefault(g, g)

    def __len__(self) -> int:
        return len(self.vectors) + len(self.gangs)


def group_ref(member: Member | None) -> GroupRef | None:
    """A HyperJob child's place among its siblings, as admission reads it."""
    return (
        None
        if member is None
        else GroupRef(member.hyperjob, member.min_available, member.children, member.index)
    )


@dataclass(frozen=True)
class JobFacts:
    """A job's immutable admission inputs, as stored at submit."""

    uid: str
    namespace: str
    name: str
    queue: str
    priority: int
    created: float
    request: ResourceVector  # the whole job, shown by describe
    gang: Gang
    # The gang's minResources (its minAvailable pods in task order): what admission charges.
    min_request: ResourceVector
    pod_requests: Mapping[str, ResourceVector]
    allowed: frozenset[str] | None
    selector: Mapping[str, str]
    topology: tuple[str, int | None] | None
    min_available: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    unpreemptable: frozenset[str] = frozenset()  # tasks whose pods are never victims
    task_priorities: Mapping[str, int] = field(default_factory=dict)  # tasks with their own class
    group: GroupRef | None = None  # a HyperJob's child
    workload: str = ""  # the API resource it is written as in its cluster ("" for a Volcano Job)
    partitions: tuple[Partitions, ...] = ()  # the gang's partitioned tasks
    gpu_hints: tuple[Mapping[str, str], ...] = ()  # per gang shape, its GPU annotations
    preferred: tuple[str, ...] = ()  # clusters in the order it prefers them
    prefs: PlacementPrefs = NO_PREFS  # tolerations, datasets, preference wait, binpack/spread
    anti_affinity: tuple[AntiTerm, ...] = ()  # its pods' required pod anti-affinity terms
    tasks: tuple[str, ...] = ()  # its task names
    template_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # labelled tasks
    checkpoint_interval: float = 0.0  # vglobal.io/checkpoint-interval, seconds (0 = none)

    @classmethod
    def of(
        cls,
        *,
        uid: str,
        namespace: str,
        name: str,
        queue: str,
        priority: int,
        created: float,
        request: Mapping[str, int],
        gang: Iterable[tuple[ResourceVector, int]],
        pod_requests: Mapping[str, Mapping[str, int]],
        placement: StoredPlacement,
        shared: Shared,
        **rest: Any,
    ) -> JobFacts:
        """From the stored columns: the gang and vectors shared, the placement taken apart."""
        topo = placement.topology
        gang_ = shared.gang(tuple((shared.vector(v), n) for v, n in gang))
        min_request = ResourceVector()
        for vec, count in gang_:
            min_request = min_request + vec.scale(count)
        return cls(
            uid=uid,
            namespace=namespace,
            name=name,
            queue=queue,
            priority=priority,
            created=created,
            request=shared.vector(ResourceVector(request)),
            gang=gang_,
            min_request=shared.vector(min_request),
            pod_requests={t: ResourceVector(u) for t, u in pod_requests.items()},
            allowed=placement.clusters,
            selector=placement.selector,
            topology=(topo.mode, topo.highest_tier_allowed) if topo else None,
            group=group_ref(placement.member),
            workload=placement.workload,
            partitions=partitions_of(placement.partitions),
            gpu_hints=placement.gpu,
            preferred=placement.preferred,
            prefs=placement.prefs,
            tasks=tuple(pod_requests),
            **rest,
        )

    @property
    def pinned(self) -> bool:
        """Every task's pods are never victims."""
        return bool(self.pod_requests) and self.unpreemptable >= self.pod_requests.keys()

    def charged(self, running: Mapping[str, ResourceVector]) -> tuple[ResourceVector, ResourceVector]:
        """(what the queue is charged, what of it runs): the pods that run, and at least the gang's
        minResources while it is not all placed (Volcano's inqueue reservation)."""
        ran = ResourceVector()
        for vec in running.values():
            ran = ran + vec
        return ran.maximum(self.min_request), ran

    def running_pods(
        self, placements: Sequence[Mapping[str, Any]] | None, evicting: Sequence[str] | None
    ) -> tuple[RunningPod, ...]:
        """The reported pods that hold a node, but those its agent is told to evict already."""
        gone = set(evicting or ())
        out = []
        labels: dict[str, Mapping[str, str]] = {}  # one per task, shared by its pods
        for raw in placements or ():
            p = PodPlacement.from_json(raw)
            if p.holds_node and p.uid and p.uid not in gone:
                req = self.pod_requests.get(p.task, ResourceVector())
                prio = self.task_priorities.get(p.task)
                own = labels.get(p.task)
                if own is None:
                    template = self.template_labels.get(p.task)
                    own = labels[p.task] = task_pod_labels(self.name, self.namespace, p.task, template)
                ok = p.task not in self.unpreemptable
                out.append(RunningPod(p.uid, p.node, req, ok, prio, p.cards, labels=own))
        return tuple(out)

    def beyond(
        self, placements: Sequence[Mapping[str, Any]] | None, charged: ResourceVector
    ) -> ResourceVector:
        """What its pods would take beyond what its queue is charged (``charged``): its reported
        pods not finished (placed or waiting for a node: a job scaled in place reports its new
        pods) less that; before any report, the whole job less it."""
        if not placements:
            return (self.request - charged).pos()
        if all(raw.get("node") or raw.get("phase") in FINISHED_POD_PHASES for raw in placements):
            return ResourceVector()  # all placed: what runs is within what it is charged
        live = ResourceVector()
        for raw in placements:
            p = PodPlacement.from_json(raw)
            if p.phase not in FINISHED_POD_PHASES:
                live = live + self.pod_requests.get(p.task, ResourceVector())
        return (live - charged).pos()

    def usage_per_node(self, placements: Sequence[Mapping[str, Any]] | None) -> Mapping[str, ResourceVector]:
        """What the job's reported pods (PodPlacement JSON) take on each node."""
        per_node: dict[str, ResourceVector] = {}
        for raw in placements or ():
            p = PodPlacement.from_json(raw)
            if p.holds_node:
                req = self.pod_requests.get(p.task, ResourceVector())
                per_node[p.node] = per_node.get(p.node, ResourceVector()) + req
        return per_node


# ---- jobs


# PendingJob's slots in field order, each set directly. Its frozen dataclass __init__ takes 23
# keywords and sets each field through object.__setattr__: about three times the cost, which a new
# leader's first read pays once per waiting job (1M of them: some 5 s of its 34).
(
    _set_uid, _set_name, _set_namespace, _set_queue, _set_priority, _set_created,
    _set_waiting_since, _set_request, _set_gang, _set_allowed_clusters, _set_cluster_selector,
    _set_excluded_clusters, _set_preferred_clusters, _set_prefs, _set_network_topology,
    _set_preemption_policy, _set_group, _set_workload, _set_partitions, _set_gpu_hints,
    _set_anti_affinity, _set_tasks, _set_task_labels,
) = (getattr(PendingJob, f.name).__set__ for f in fields(PendingJob))  # fmt: skip
_new = object.__new__


def pending_job(
    f: JobFacts, *, waiting_since: float, excluded: Mapping[str, float] | None, now: float
) -> PendingJob:
    """A waiting job: its facts, since when it waits, and the clusters it skips until when."""
    gone = frozenset(c for c, t in excluded.items() if float(t) > now) if excluded else frozenset()
    job: PendingJob = _new(PendingJob)
    _set_uid(job, f.uid)
    _set_name(job, f.name)
    _set_namespace(job, f.namespace)
    _set_queue(job, f.queue)
    _set_priority(job, f.priority)
    _set_created(job, f.created)
    _set_waiting_since(job, waiting_since)
    _set_request(job, f.min_request)
    _set_gang(job, f.gang)
    _set_allowed_clusters(job, f.allowed)
    _set_cluster_selector(job, f.selector)
    _set_excluded_clusters(job, gone)
    _set_preferred_clusters(job, f.preferred)
    _set_prefs(job, f.prefs)
    _set_network_topology(job, f.topology)
    _set_preemption_policy(job, f.preemption_policy)
    _set_group(job, f.group)
    _set_workload(job, f.workload)
    _set_partitions(job, f.partitions)
    _set_gpu_hints(job, f.gpu_hints)
    _set_anti_affinity(job, f.anti_affinity)
    _set_tasks(job, f.tasks)
    _set_task_labels(job, f.template_labels)
    return job


class Admitted(NamedTuple):
    """An admitted job as admission reads it: what its queue is charged, what of that its placed
    pods hold (None before any is placed), and the run (None while it names no cluster)."""

    charged: ResourceVector
    ran: ResourceVector | None
    running: RunningJob | None


def admitted_job(
    f: JobFacts,
    shared: Shared,
    *,
    cluster: str | None,
    placements: Sequence[Mapping[str, Any]] | None,
    evictions: Sequence[str] | None,
    dispatched_at: float | None,
    checkpointed: float | None = None,
) -> Admitted:
    """An admitted job from its binding: its reported pods (PodPlacement JSON), the pod uids its
    agent is told to evict, when this run was admitted and when it last saved its work."""
    per_node = f.usage_per_node(placements) if placements else _NO_NODES
    ran: ResourceVector | None = None
    if per_node:
        charged, ran_ = f.charged(per_node)
        charged, ran = shared.vector(charged), shared.vector(ran_)
    else:
        charged = f.min_request
    running = None
    if cluster:
        running = RunningJob(
            uid=f.uid,
            queue=f.queue,
            cluster=cluster,
            priority=f.priority,
            created=f.created,
            request=charged,
            placements=per_node,
            running_since=dispatched_at,
            pods=f.running_pods(placements, evictions) if per_node else (),
            min_available=f.min_available,
            group=None if f.group is None else f.group.key,
            whole_only=f.workload in GROUPED,
            pinned=f.pinned,
            holds_pinned=bool(f.unpreemptable & f.pod_requests.keys()),
            namespace=f.namespace,
            anti_affinity=f.anti_affinity,
            name=f.name,
            preferred=f.preferred[:1],
            prefs=f.prefs,
            checkpoint_interval=f.checkpoint_interval,
            checkpointed=checkpointed,
        )
    return Admitted(charged, ran, running)


# ---- clusters


def usable(node: Mapping[str, Any]) -> bool:
    """A node admission may count on: schedulable, no taint that keeps pods off."""
    return not node.get("unschedulable") and not any(
        t.get("effect") in _BLOCKING_TAINTS for t in node.get("taints", ())
    )


def node_snap(node: Mapping[str, Any], free: Mapping[str, int] | None) -> NodeSnap:
    """A reported node (as a cluster row keeps it) with its last reported free capacity."""
    return NodeSnap(
        name=node["name"],
        free=ResourceVector(free or {}) if usable(node) else ResourceVector(),
        allocatable=ResourceVector(node.get("allocatable", {})),
        labels=node.get("labels", {}),
    )


def device_tables(devices: Mapping[str, Sequence[Any]]) -> Mapping[str, tuple[CardFree, ...]]:
    """Per GPU node, its reported cards (as a cluster row keeps them)."""
    return {n: tuple(CardFree.from_json(c) for c in cards) for n, cards in devices.items()}


def hypernode_snaps(hypernodes: Iterable[Mapping[str, Any]]) -> tuple[HyperNodeSnap, ...]:
    """A cluster's HyperNodes as reported (as a cluster row keeps them)."""
    return tuple(
        HyperNodeSnap(
            name=h["name"],
            tier=int(h["tier"]),
            parent=h.get("parent") or None,
            nodes=tuple(h.get("nodes", ())),
        )
        for h in hypernodes
    )


def cluster_snap(
    *,
    name: str,
    labels: Mapping[str, str],
    nodes: Iterable[NodeSnap],
    schedulable: bool,
    hypernodes: Iterable[Mapping[str, Any]],
    devices: Mapping[str, tuple[CardFree, ...]],
    unplaced: Sequence[Gang],
    unplaced_cards: tuple[tuple[Gang, tuple[Mapping[str, str], ...]], ...] = (),
    pools: Iterable[Mapping[str, Any]] = (),
) -> ClusterSnap:
    """The cluster as admission sees it: its nodes by name, then the empty nodes its pools can
    still add, its HyperNodes as reported, the gangs admitted to it but not placed yet (and those
    of them that take GPU cards, with their GPU annotations)."""
    return ClusterSnap(
        devices=devices,
        name=name,
        labels=labels,
        nodes=(*sorted(nodes, key=_name), *provisionable_nodes(pools)),
        schedulable=schedulable,
        hypernodes=hypernode_snaps(hypernodes),
        unplaced=tuple(unplaced),
        unplaced_cards=unplaced_cards,
    )


def provisionable_nodes(pools: Iterable[Mapping[str, Any]]) -> list[NodeSnap]:
    """Per reported pool (as a cluster row keeps it), one empty node for each it may still add:
    ``<pool>-provisionable-<i>``, labelled with the pool's name under PROVISIONABLE."""
    out = []
    for p in sorted(pools, key=lambda p: str(p["name"])):
        alloc = ResourceVector(p.get("allocatable", {}))
        labels = {**p.get("labels", {}), PROVISIONABLE: p["name"]}
        room = int(p.get("max", 0)) - int(p.get("current", 0))
        out += [NodeSnap(f"{p['name']}-provisionable-{i}", alloc, alloc, labels) for i in range(max(room, 0))]
    return out


def _name(n: NodeSnap) -> str:
    return n.name


def claim_row(claim: Claim) -> dict[str, Any]:
    """A claim as stored between cycles (JSON): the hub keeps it in Postgres, the simulator in memory."""
    return {
        "for": claim.for_uid,
        "cluster": claim.cluster,
        "nodes": list(claim.nodes),
        "victims": list(claim.victims),
        "expires": claim.expires,
    }


def claims_of(rows: Iterable[Mapping[str, Any]]) -> tuple[Claim, ...]:
    """The stored claims as the next cycle's input (Snapshot.claims), in a stable order."""
    got = [
        Claim(r["for"], r["cluster"], tuple(r["nodes"]), tuple(r["victims"]), float(r["expires"]))
        for r in rows
    ]
    return tuple(sorted(got, key=lambda c: c.for_uid))
