"""The typed forms of what the hub stores of a job as JSON: its gang, where it may run, its task
counts and where its pods run. Each converts to the JSON the store keeps and back; nothing else
reads or writes those columns' insides."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vglobal.model import hyperjob
from vglobal.model.cards import CardUse
from vglobal.model.gpu_fit import gpu_hints
from vglobal.model.job import Job, NetworkTopology, Task
from vglobal.model.placement_prefs import NO_PREFS, PlacementPrefs
from vglobal.model.resources import ResourceVector
from vglobal.model.served import resource_of

POD_SLOT = ResourceVector({"pods": 1})  # every pod also takes one of its node's pod slots
# A pod its cluster confirmed stopped and gone (a cancelled job's): what the hub shows in its place.
TERMINATED = "Terminated"
FINISHED_POD_PHASES = frozenset({"Succeeded", "Failed", TERMINATED})


@dataclass(frozen=True, slots=True)
class PodShape:
    """``count`` pods that each request ``request`` (their pod slot included)."""

    request: ResourceVector
    count: int


@dataclass(frozen=True, slots=True)
class Gang:
    """The pods that must start together (the job's ``minAvailable``), by shape, in task order."""

    shapes: tuple[PodShape, ...]

    @classmethod
    def of(cls, job: Job) -> Gang:
        return cls(tuple(PodShape(req + POD_SLOT, n) for _, req, n in job.gang_shapes() if n > 0))

    def to_json(self) -> list[list[Any]]:
        return [[dict(s.request.items()), s.count] for s in self.shapes]

    @classmethod
    def from_json(cls, data: Iterable[Sequence[Any]]) -> Gang:
        return cls(tuple([PodShape(ResourceVector(units), n) for units, n in data]))


def gang_gpu_hints(job: Job) -> tuple[Mapping[str, str], ...]:
    """Per gang shape, the GPU annotations of its task's pods; () when no task has any."""
    tasks = {t.name: t for t in job.tasks}
    hints = tuple(gpu_hints(tasks[name].annotations) for name, _, _ in job.gang_shapes())
    return hints if any(hints) else ()


def _topology_json(topo: NetworkTopology | None) -> dict[str, Any] | None:
    if topo is None:
        return None
    return {"mode": topo.mode, "tier": topo.highest_tier_allowed, "tier_name": topo.highest_tier_name}


def _topology_of(topo: Mapping[str, Any] | None) -> NetworkTopology | None:
    if not topo:
        return None
    return NetworkTopology(
        mode=topo["mode"], highest_tier_allowed=topo.get("tier"), highest_tier_name=topo.get("tier_name")
    )


@dataclass(frozen=True, slots=True)
class PartitionGang:
    """``count`` partitions of the gang, each ``size`` pods of ``request`` (pod slot included) that
    must sit together inside one HyperNode its ``topology`` allows."""

    request: ResourceVector
    size: int
    count: int
    topology: NetworkTopology | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "request": dict(self.request.items()),
            "size": self.size,
            "count": self.count,
            "topology": _topology_json(self.topology),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionGang:
        return cls(
            ResourceVector(data["request"]), data["size"], data["count"], _topology_of(data.get("topology"))
        )


@dataclass(frozen=True, slots=True)
class Member:
    """A HyperJob's child: the HyperJob (namespace/name), its minAvailable and number of
    children, and this child's index among them."""

    hyperjob: str
    min_available: int
    children: int
    index: int

    @classmethod
    def of(cls, job: Job) -> Member | None:
        name = job.labels.get(hyperjob.HYPERJOB_LABEL)
        count = job.annotations.get(hyperjob.CHILDREN_ANNOTATION)
        if not name or count is None:
            return None
        try:
            children = int(count)
            return cls(
                f"{job.namespace}/{name}",
                int(job.annotations.get(hyperjob.MIN_AVAILABLE_ANNOTATION, children)),
                children,
                int(job.annotations.get(hyperjob.INDEX_ANNOTATION, 0)),
            )
        except ValueError:
            return None

    def to_json(self) -> list[Any]:
        return [self.hyperjob, self.min_available, self.children, self.index]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a job may run: the allowed clusters (None: any), a selector on cluster labels, its
    network topology constraint and the gang's partitions (each placed whole in its own HyperNode);
    a HyperJob's child also names its HyperJob (admitted with its siblings). ``workload`` is the API
    resource the job is written as in its cluster (a RayCluster's ``rayclusters.ray.io``; "" for a
    Volcano Job): clusters that lack it are passed over."""

    clusters: frozenset[str] | None = None
    selector: Mapping[str, str] = field(default_factory=dict)
    topology: NetworkTopology | None = None
    member: Member | None = None
    partitions: tuple[PartitionGang, ...] = ()
    workload: str = ""
    # Per gang shape (Gang.of's order), its task's GPU annotations (gpu_fit.GPU_HINTS); () if none.
    gpu: tuple[Mapping[str, str], ...] = ()
    preferred: tuple[str, ...] = ()  # vglobal.io/cluster-preference, in order
    prefs: PlacementPrefs = NO_PREFS  # tolerations, datasets, preference wait, binpack/spread

    @classmethod
    def of(cls, job: Job) -> Placement:
        partitions = tuple(
            PartitionGang(
                t.pod_request + POD_SLOT,
                t.partition_policy.partition_size,
                n,
                t.partition_policy.network_topology,
            )
            for t, n in job.gang_partitions()
            if t.partition_policy is not None and n > 0
        )
        return cls(
            job.allowed_clusters,
            dict(job.cluster_selector),
            job.network_topology,
            Member.of(job),
            partitions,
            resource_of(job.raw),
            gang_gpu_hints(job),
            job.preferred_clusters,
            job.placement_prefs,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "clusters": None if self.clusters is None else sorted(self.clusters),
            "selector": dict(self.selector),
            "topology": _topology_json(self.topology),
            **({} if self.member is None else {"hyperjob": self.member.to_json()}),
            **({"workload": self.workload} if self.workload else {}),
        }
        if self.partitions:
            out["partitions"] = [p.to_json() for p in self.partitions]
        if self.gpu:
            out["gpu"] = [dict(h) for h in self.gpu]
        if self.preferred:
            out["preferred"] = list(self.preferred)
        if self.prefs:
            out["prefs"] = self.prefs.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Placement:
        clusters = data.get("clusters")
        topo = data.get("topology")
        return cls(
            clusters=None if clusters is None else frozenset(clusters),
            selector=data.get("selector") or {},
            topology=_topology_of(topo),
            member=Member(*data["hyperjob"]) if data.get("hyperjob") else None,
            workload=str(data.get("workload") or ""),
            partitions=tuple(PartitionGang.from_json(p) for p in data.get("partitions") or ()),
            gpu=tuple(data.get("gpu") or ()),
            preferred=tuple(data.get("preferred") or ()),
            prefs=PlacementPrefs.from_json(data.get("prefs")),
        )


@dataclass(frozen=True, slots=True)
class TaskCounts:
    """How many of a task's pods are in each phase."""

    name: str
    replicas: int
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    @classmethod
    def submitted(cls, task: Task) -> TaskCounts:
        """A task no pod of which has been created yet: all pending."""
        return cls(task.name, task.replicas, pending=task.replicas)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "replicas": self.replicas,
            "pending": self.pending,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskCounts:
        return cls(
            data["name"],
            int(data["replicas"]),
            int(data.get("pending", 0)),
            int(data.get("running", 0)),
            int(data.get("succeeded", 0)),
            int(data.get("failed", 0)),
        )


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """Where one pod of a job's task runs (``node`` empty: not placed yet), and its phase."""

    pod: str
    task: str
    node: str
    phase: str
    uid: str = ""  # the agent's name for this incarnation of the pod ("" from older agents)
    cards: tuple[CardUse, ...] = ()  # the GPU cards its agent granted it
    name_in_cluster: str = ""  # the pod's name in its cluster when not ``pod`` (workload kinds)
    ip: str = ""
    restarts: int = 0
    cause: str = ""  # why it does not run as it should, as its cluster says ("" when nothing is wrong)

    @property
    def real_name(self) -> str:
        """The pod's name in its cluster (what kubectl shows)."""
        return self.name_in_cluster or self.pod

    @property
    def holds_node(self) -> bool:
        """Whether the pod takes room on its node (placed and not finished)."""
        return bool(self.node) and self.phase not in FINISHED_POD_PHASES

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pod": self.pod, "task": self.task, "node": self.node, "phase": self.phase}
        if self.uid:
            out["uid"] = self.uid
        if self.cards:
            out["cards"] = [c.to_json() for c in self.cards]
        for key, value in (
            ("nameInCluster", self.name_in_cluster), ("ip", self.ip), ("restarts", self.restarts),
            ("cause", self.cause),
        ):  # fmt: skip
            if value:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PodPlacement:
        return cls(
            data["pod"],
            data.get("task") or "",
            data.get("node") or "",
            data.get("phase") or "",
            data.get("uid") or "",
            tuple(CardUse.from_json(c) for c in data.get("cards") or ()),
            str(data.get("nameInCluster") or ""),
            str(data.get("ip") or ""),
            int(data.get("restarts") or 0),
            str(data.get("cause") or ""),
        )


def after_stop(known: Iterable[PodPlacement], reported: Iterable[PodPlacement]) -> list[PodPlacement]:
    """The pods of a run its cluster confirmed stopped: what it still reports (finished pods it
    keeps), and every pod known before that it no longer reports, as Terminated on its node."""
    now: dict[str, PodPlacement | None] = {p.pod: p for p in reported}
    out = [now.pop(p.pod, None) or replace(p, phase=TERMINATED) for p in known]
    return out + [p for p in now.values() if p is not None]


def tasks_to_json(tasks: Iterable[TaskCounts]) -> list[dict[str, Any]]:
    return [t.to_json() for t in tasks]


def tasks_from_json(data: Iterable[Mapping[str, Any]] | None) -> tuple[TaskCounts, ...]:
    return tuple(TaskCounts.from_json(t) for t in data or ())


def placements_to_json(placements: Iterable[PodPlacement]) -> list[dict[str, Any]]:
    return [p.to_json() for p in placements]


def placements_from_json(data: Iterable[Mapping[str, Any]] | None) -> tuple[PodPlacement, ...]:
    return tuple(PodPlacement.from_json(p) for p in data or ())
