"""What the store hands out: plain records of queues, priority classes, jobs with their binding,
clusters and events, as they were when read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vglobal.model.forms import Gang, Placement, PodPlacement, TaskCounts
from vglobal.model.phases import ClusterState


@dataclass(frozen=True)
class QueueRow:
    name: str
    parent: str | None
    weight: int
    priority: int
    state: str
    reclaimable: bool
    capability: dict[str, int] | None
    deserved: dict[str, int] | None
    guarantee: dict[str, int]
    manifest: dict[str, Any]
    created_at: datetime
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def annotations(self) -> Mapping[str, str]:
        """Its manifest's metadata.annotations (where the queue's vglobal.io/ settings live)."""
        meta = self.manifest.get("metadata")
        found = meta.get("annotations") if isinstance(meta, Mapping) else None
        return found if isinstance(found, Mapping) else {}


@dataclass(frozen=True)
class QueueUsage:
    # What admitted jobs are charged: what their placed pods hold, at least each gang's minResources.
    allocated: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    running: int = 0
    # Of `allocated`, what placed pods hold; the rest is reserved for gangs not all placed yet.
    placed: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredUsage:
    """A queue's decayed usage (fair share over time) as the leader last stored it."""

    queue: str
    usage: dict[str, float]  # its own jobs' resource-seconds, decayed to `at`
    rolled: dict[str, float]  # with its descendants'
    share: float  # dominant decayed share of deserved
    at: float  # the database's clock, epoch seconds


@dataclass(frozen=True)
class PriorityClassRow:
    name: str
    value: int
    global_default: bool
    preemption_policy: str


@dataclass(frozen=True)
class JobRow:
    uid: str
    namespace: str
    name: str
    request_id: str | None
    queue: str
    priority_class_name: str | None
    priority: int
    min_available: int
    request: dict[str, int]
    gang: Gang
    placement: Placement
    manifest: dict[str, Any]
    phase: str
    retry_count: int
    tasks: tuple[TaskCounts, ...]
    placements: tuple[PodPlacement, ...]
    created_at: datetime
    updated_at: datetime
    # binding
    binding_phase: str
    cluster: str | None
    generation: int
    attempts: int
    excluded_clusters: dict[str, float]
    reason: str
    reason_kind: str  # a WaitKind while the job waits; empty when the reason is no wait
    waiting_since: datetime
    labels: Mapping[str, str] = field(default_factory=dict)
    submitted_by: str | None = None  # the audit's principal of its Submitted event
    finished_at: datetime | None = None  # when its binding finished
    # kubectl's apply: metadata.generation (bumped by each change applied), status.observedGeneration
    # (the one its cluster said it runs), and per field path the manager that last set it.
    spec_generation: int = 1
    observed_generation: int = 0
    managed_fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterRow:
    name: str
    labels: dict[str, str]
    state: str
    cordoned: bool
    nodes: list[dict[str, Any]]
    free: dict[str, dict[str, int]]
    last_heartbeat: datetime
    not_ready_since: datetime | None
    hypernodes: list[dict[str, Any]] = field(default_factory=list)
    devices: dict[str, list[list[Any]]] = field(default_factory=dict)  # node -> cards (gpu_fit.CardFree)
    pools: list[dict[str, Any]] = field(default_factory=list)  # node pools it can grow

    @property
    def effective_state(self) -> str:
        if self.state == ClusterState.Ready and self.cordoned:
            return ClusterState.Cordoned
        return self.state


@dataclass(frozen=True)
class EventRow:
    id: int
    time: datetime
    job_uid: str | None
    cluster: str | None
    kind: str
    reason: str
    message: str
    source: str
    principal: str | None = None
    subject: str | None = None


@dataclass(frozen=True)
class OwnedJob:
    """A job a CronJob or JobFlow made, as far as its owner looks at it."""

    uid: str
    name: str
    phase: str
    binding_phase: str
    created_at: datetime
    finished_at: datetime | None
    tasks: tuple[TaskCounts, ...]


@dataclass(frozen=True)
class CronJobRow:
    uid: str
    namespace: str
    name: str
    manifest: dict[str, Any]
    status: dict[str, Any]  # CronStatus as JSON (store/repo/cronjobs.py reads it)
    next_time: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class JobTemplateRow:
    namespace: str
    name: str
    manifest: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class JobFlowRow:
    uid: str
    namespace: str
    name: str
    manifest: dict[str, Any]
    templates: dict[str, dict[str, Any]]  # flow name -> JobTemplate manifest, as applied
    phase: str
    status: dict[str, Any]  # JobFlowStatus as JSON (store/repo/jobflows.py reads it)
    created_at: datetime


@dataclass(frozen=True)
class JobChange:
    """One entry of the job change log: a job as a change left it (see store/repo/job_changes)."""

    revision: int
    kind: str  # ADDED | MODIFIED | DELETED
    job_uid: str
    namespace: str
    name: str
    queue: str
    labels: Mapping[str, str]
    state: Mapping[str, Any]  # the fields of job_watch_state() (migration 0006)
    time: datetime


@dataclass(frozen=True)
class DispatchRow:
    generation: int
    cluster: str
    dispatched_at: datetime
    ended_at: datetime | None  # None while it is the current run
    outcome: str  # empty while it runs; see the JobDispatch message
    fenced: bool
    reason: str


@dataclass(frozen=True)
class QueueSample:
    queue: str
    time: datetime
    allocated: dict[str, int]  # units (model/resources)
    deserved: dict[str, int]
    capability: dict[str, int]
    guarantee: dict[str, int]
    pending: int
    running: int
    share: float


@dataclass(frozen=True)
class PlacedJob:
    """An admitted job on a cluster and its pods, as its agent last reported them."""

    namespace: str
    name: str
    queue: str
    phase: str
    placements: tuple[PodPlacement, ...]
