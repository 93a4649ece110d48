"""Input and output types of one scheduling cycle.

The caller (the agent, the simulator, the tests) builds a :class:`ClusterSnapshot` and gets a
:class:`CycleResult` back. Resources are canonical integer units (``vglobal.model.resources``):
cpu millicores, memory bytes, ``pods`` a count, every other resource milli-units (1 GPU = 1000).
Node usage is not an input: it is derived from the tasks that sit on each node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.mig_fit import MigInstance
from vglobal.model.resources import EMPTY, ResourceVector

_NO_STRINGS: Mapping[str, str] = {}
_NO_ANY: Mapping[str, Any] = {}


class TaskStatus(StrEnum):
    """Volcano's task status (``api/types.go``)."""

    Pending = "Pending"
    Allocated = "Allocated"
    Pipelined = "Pipelined"
    Binding = "Binding"
    Bound = "Bound"
    Running = "Running"
    Releasing = "Releasing"
    Succeeded = "Succeeded"
    Failed = "Failed"
    Unknown = "Unknown"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    allocatable: ResourceVector  # includes "pods" (max pod count)
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    # Free-form data for plugins added later (GPU inventory, HyperNode membership ...).
    extensions: Mapping[str, Any] = field(default_factory=lambda: _NO_ANY)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    uid: str
    name: str  # pod name "<job>-<task>-<index>"
    job_uid: str
    role: str  # the Volcano task name
    index: int
    request: ResourceVector
    status: TaskStatus = TaskStatus.Pending
    node: str | None = None
    priority: int = 1
    node_selector: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    affinity: Mapping[str, Any] | None = None  # the raw pod spec.affinity
    tolerations: tuple[Mapping[str, Any], ...] = ()
    host_ports: tuple[int, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    preemptable: bool = True
    namespace: str = "default"
    creation: int = 0  # ordering key among tasks with the same index suffix
    priority_class: str = ""  # system-cluster-critical / system-node-critical are never evicted
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)  # (anti-)affinity, subgroups
    # the GPUs a task on a node holds, as it was bound with them (Volcano reads them from the
    # pod's device annotation); () = not known: deviceshare gives it devices by its own rule
    devices: tuple[Grant, ...] = ()


@dataclass(frozen=True, slots=True)
class SubGroupSpec:
    """One PodGroup ``subGroupPolicy`` entry (``vglobal.model.partition.SubGroupPolicy``), its network
    topology resolved to (mode, highest tier allowed) on this cluster."""

    name: str
    size: int = 1  # subGroupSize: the pods of one subgroup, placed whole
    min_groups: int = 0  # minSubGroups: subgroups that must be placed for the job to be ready
    match_labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    match_label_keys: tuple[str, ...] = ()
    network_topology: tuple[str, int] | None = None


@dataclass(frozen=True, slots=True)
class JobSpec:
    uid: str
    name: str
    namespace: str
    queue: str
    priority: int
    min_available: int
    task_min_available: Mapping[str, int]
    creation: int  # ordering key, smaller = older
    tasks: tuple[TaskSpec, ...]
    podgroup_phase: str = "Pending"  # Pending | Inqueue | Running | Unknown | Completed
    network_topology: tuple[str, int] | None = None  # (mode, highest tier allowed)
    preemption_policy: str = "PreemptLowerPriority"  # or "Never"
    # PodGroup minResources; None = the sum of the first min_available tasks in priority order.
    min_resources: ResourceVector | None = None
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    sub_groups: tuple[SubGroupSpec, ...] = ()  # the PodGroup's subGroupPolicy
    # Nodes the hub freed for it by preemption or reclaim (Volcano's nominatedNodeName, per job):
    # allocate tries them first, and preempt leaves a task alone while one of them fits it.
    nominated_nodes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueueSpec:
    name: str
    parent: str | None = "root"
    weight: int = 1
    priority: int = 0
    capability: ResourceVector | None = None
    deserved: ResourceVector | None = None
    guarantee: ResourceVector = EMPTY
    reclaimable: bool = True
    state: str = "Open"  # Open | Closed | Closing | Unknown
    creation: int = 0
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    affinity: Mapping[str, Any] | None = None  # spec.affinity (nodeGroupAffinity / AntiAffinity)
    # capability, deserved and guarantee are the hub's, less what the queue holds on the other
    # clusters: the capability then holds on every pod beyond a gang whatever the conf
    # (``vglobal.scheduler.hub_limits``), not only with proportion or capacity.
    federated: bool = False


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """The scheduler's input: one cluster's nodes, the jobs on it and their queues, at session open."""

    nodes: tuple[NodeSpec, ...]
    jobs: tuple[JobSpec, ...]
    queues: tuple[QueueSpec, ...]
    # the cluster's resolved network topology (network-topology-aware); empty = none known
    hyper_nodes: tuple[ResolvedHyperNode, ...] = ()


@dataclass(frozen=True, slots=True)
class Grant:
    """One device given to one task (an output of the cycle, read by the agent's backends)."""

    device: int
    memory_mib: int
    cores: int
    whole: bool = False
    geometry: int | None = None
    instance: MigInstance | None = None
    # a MIG instance's position in its geometry, as Volcano's MIG id "<uuid>[<group>-<position>]"
    # names it: the slots of the profiles before it, then the ones of its profile taken before
    position: int = 0


@dataclass(frozen=True, slots=True)
class CycleResult:
    binds: Mapping[str, str]  # task uid -> node, to bind now
    pipelined: Mapping[str, str]  # task uid -> node, waiting for releasing resources
    evictions: tuple[str, ...]  # task uids to evict (preempt / reclaim victims)
    podgroup_phases: Mapping[str, str]  # job uid -> PodGroup phase after the session
    reasons: Mapping[str, str]  # job uid -> why it is not (fully) scheduled
    # task uid -> the GPUs deviceshare gave it, for tasks in ``binds`` (a backend writes them down)
    devices: Mapping[str, tuple[Grant, ...]] = field(default_factory=dict)


__all__ = [
    "EMPTY",
    "ClusterSnapshot",
    "CycleResult",
    "Grant",
    "JobSpec",
    "MigInstance",
    "NodeSpec",
    "QueueSpec",
    "ResourceVector",
    "SubGroupSpec",
    "Taint",
    "TaskSpec",
    "TaskStatus",
]
