"""The seam between the agent's controller/scheduler and a cluster.

A backend owns the truth about nodes and pods. The controller asks it to create, bind and delete
pods and reads back what it observes; it never assumes a request took effect before the backend
reports it. The kube backend maps these calls to pod create / Binding / delete and a pod watch;
its writes are asynchronous, so what the cluster refused comes back later as ``JobProblem``s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vglobal.agent.pods import PodManifest, PodStatus
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.job import Job
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import Grant, NodeSpec


@dataclass(frozen=True, slots=True)
class DependencyObject:
    """A ConfigMap or Secret the hub sent with a job: created in the job's namespace before its pods.
    ``data`` holds every key's bytes; ``text_keys`` are a ConfigMap's ``data`` (the rest binaryData)."""

    kind: str
    namespace: str
    name: str
    data: Mapping[str, bytes] = field(repr=False)
    text_keys: frozenset[str] = frozenset()
    type: str = ""
    immutable: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    revision: int = 0


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run of a job beginning on this cluster, as the backend needs to know it."""

    uid: str
    generation: int
    job: Job
    queue: str
    priority: int
    objects: list[dict[str, Any]] = field(default_factory=list)  # the job plugins' services / config maps
    dependencies: tuple[DependencyObject, ...] = ()  # the ConfigMaps and Secrets its pods reference


@dataclass(frozen=True, slots=True)
class JobProblem:
    """What the cluster said about a job's writes: ``event`` (tell the user, e.g. a missing RBAC
    rule), ``fail`` (the server refused the job's objects, e.g. 422, or its workload object
    failed), ``complete`` (its workload object succeeded), ``reject`` (hand it back to the
    hub, e.g. its namespace is missing) or ``checkpoint`` (it saved its work: the message is
    when, epoch seconds)."""

    job_uid: str
    action: str  # event | fail | complete | reject | checkpoint
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A node pool the cluster can grow on demand: one new node's shape, its nodes now (not those
    asked for and still coming), its maximum, and how long a new node takes to come up."""

    name: str
    allocatable: ResourceVector
    labels: Mapping[str, str]
    current: int
    max: int
    provision_seconds: float
    coming: int = 0  # asked for, not up yet


class Backend(Protocol):
    @property
    def cluster_name(self) -> str: ...

    @property
    def cluster_labels(self) -> Mapping[str, str]: ...

    def nodes(self) -> tuple[NodeSpec, ...]:
        """The schedulable inventory (allocatable includes ``pods``)."""
        ...

    def hyper_nodes(self) -> tuple[ResolvedHyperNode, ...]:
        """The cluster's resolved HyperNode tree (manifests and label discovery); empty if none."""
        ...

    def inventory_version(self) -> int:
        """Changes whenever nodes, node pools or HyperNodes change, so the agent reports them again."""
        ...

    def pools(self) -> tuple[PoolSpec, ...]:
        """The node pools the cluster can grow (empty if none)."""
        ...

    def grow(self, pool: str, count: int, job_uid: str = "") -> str:
        """Ask the cluster for ``count`` more nodes of ``pool`` for the run ``job_uid``; they show
        in ``nodes`` once up. Returns what the run's event should add ("": nothing), e.g. that
        the nodes are not asked for its pods."""
        ...

    def free(self) -> dict[str, ResourceVector]:
        """Per node: allocatable minus the requests (and pod slots) of its unfinished pods."""
        ...

    def reserved(self) -> Mapping[str, ResourceVector]:
        """Per node: what pods that are not the agent's current ones hold (other schedulers'
        pods, daemon sets, pods being deleted); the scheduler cannot use it."""
        ...

    def binds_waiting(self) -> int:
        """Pods bound that the cluster does not show on their node yet (a sim binds at once)."""
        return 0

    def api_problem(self) -> str:
        """Why the cluster cannot be reached now ("" when it can)."""
        ...

    def job_started(self, run: RunStart) -> None:
        """A run begins; ValueError (with the reason) if this cluster cannot take it."""
        ...

    def update_dependencies(self, objects: Sequence[DependencyObject]) -> None:
        """Objects changed at the hub that this cluster's runs use: update them where they exist."""
        ...

    def job_removed(self, uid: str) -> None:
        """A run is gone for good: remove whatever the backend made for it."""
        ...

    def job_respecified(self, uid: str, job: Job) -> None:
        """A run's job changed in place (its replicas, labels, annotations): the object the
        backend made for it follows (kube: the workload's replicas patched)."""
        ...

    def create_pod(self, pod: PodManifest) -> None: ...

    def bind_pod(self, uid: str, node: str, devices: Sequence[Grant] = ()) -> None: ...

    def delete_pod(self, uid: str) -> None:
        """Remove the pod (unknown uids are ignored: deletes may race with the pod ending)."""
        ...

    def pods(self) -> Mapping[str, PodStatus]:
        """Every pod the backend knows, by uid."""
        ...

    def take_problems(self) -> list[JobProblem]:
        """What the cluster refused since the last call."""
        ...

    def job_event(self, uid: str, kind: str, reason: str, message: str) -> None:
        """Record an event of a run where the cluster's users see it (kube: a core/v1 Event)."""
        ...

    def advance(self, now: float) -> None:
        """Bring observed pod state up to ``now`` (the sim ends pods whose duration elapsed)."""
        ...

    def next_event_time(self) -> float | None:
        """When a pod will change by itself next, if the backend knows (the sim does; kube not)."""
        ...
