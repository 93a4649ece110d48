"""What admission needs of a job that never changes after submit, converted once per job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal.admission import Gang, GroupRef, Partitions, RunningPod
from vglobal.admission.fit.partitions import partitions_of
from vglobal.model.forms import PodPlacement
from vglobal.model.pod_anti_affinity import AntiTerm, task_pod_labels
from vglobal.model.resources import ResourceVector
from vglobal.store.repo.jobs import JobStatic


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


@dataclass(frozen=True)
class JobFacts:
    """A job's immutable admission inputs."""

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
    anti_affinity: tuple[AntiTerm, ...] = ()  # its pods' required pod anti-affinity terms
    tasks: tuple[str, ...] = ()  # its task names
    template_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # labelled tasks

    @classmethod
    def of(cls, s: JobStatic, shared: Shared) -> JobFacts:
        topo = s.placement.topology
        gang = shared.gang(tuple((shared.vector(p.request), p.count) for p in s.gang.shapes))
        min_request = ResourceVector()
        for vec, count in gang:
            min_request = min_request + vec.scale(count)
        return cls(
            uid=s.uid,
            namespace=s.namespace,
            name=s.name,
            queue=s.queue,
            priority=s.priority,
            created=s.created_at.timestamp(),
            request=shared.vector(ResourceVector(s.request)),
            gang=gang,
            min_request=shared.vector(min_request),
            pod_requests={t: ResourceVector(u) for t, u in s.pod_requests.items()},
            allowed=s.placement.clusters,
            selector=s.placement.selector,
            topology=(topo.mode, topo.highest_tier_allowed) if topo else None,
            min_available=s.min_available,
            preemption_policy=s.preemption_policy,
            unpreemptable=s.unpreemptable,
            task_priorities=s.task_priorities,
            group=None
            if (m := s.placement.member) is None
            else GroupRef(m.hyperjob, m.min_available, m.children, m.index),
            workload=s.placement.workload,
            partitions=partitions_of(s.placement.partitions),
            gpu_hints=s.placement.gpu,
            anti_affinity=s.anti_affinity,
            tasks=tuple(s.pod_requests),
            template_labels=s.template_labels,
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

    def usage_per_node(self, placements: Sequence[Mapping[str, Any]] | None) -> Mapping[str, ResourceVector]:
        """What the job's reported pods (PodPlacement JSON) take on each node."""
        per_node: dict[str, ResourceVector] = {}
        for raw in placements or ():
            p = PodPlacement.from_json(raw)
            if p.holds_node:
                req = self.pod_requests.get(p.task, ResourceVector())
                per_node[p.node] = per_node.get(p.node, ResourceVector()) + req
        return per_node
