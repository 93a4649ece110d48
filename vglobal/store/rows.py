"""Plain records read from the tables (what repositories return)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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


@dataclass(frozen=True)
class QueueUsage:
    allocated: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    running: int = 0


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
    gang: list[list[Any]]  # [[units, count], ...]
    placement: dict[str, Any]  # {"clusters": [...] | None, "selector": {...}}
    manifest: dict[str, Any]
    phase: str
    retry_count: int
    tasks: list[dict[str, Any]]
    placements: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime
    # binding
    binding_phase: str
    cluster: str | None
    generation: int
    attempts: int
    excluded_clusters: dict[str, float]
    reason: str
    waiting_since: datetime


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

    @property
    def effective_state(self) -> str:
        if self.state == "Ready" and self.cordoned:
            return "Cordoned"
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
