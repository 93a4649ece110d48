"""Volcano Queues (``scheduling.volcano.sh/v1beta1``), defaulted and checked as Volcano's webhook does."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, StrictBool, StrictStr

from vglobal.model.errors import Problems
from vglobal.model.k8s import (
    OBJECT_FIELDS,
    Int32,
    Metadata,
    Model,
    check_name,
    parse_resources,
    validate_model,
)
from vglobal.model.queue_affinity import (
    LIMITS_FIELD,
    NODE_GROUP_LIMITS,
    AffinitySpec,
    QueueAffinity,
    affinity_of,
    node_group_limits,
)
from vglobal.model.queue_budget import budget_of
from vglobal.model.queue_policy import check_queue_policy
from vglobal.model.resources import EMPTY, ResourceVector

API_VERSION = "scheduling.volcano.sh/v1beta1"
KIND = "Queue"
ROOT = "root"
DEFAULT = "default"
STATES = ("Open", "Closed")
MAX_WEIGHT = 65535


@dataclass(frozen=True, kw_only=True)
class Queue:
    name: str
    weight: int = 1
    priority: int = 0
    capability: ResourceVector | None = None
    deserved: ResourceVector | None = None
    guarantee: ResourceVector = EMPTY
    reclaimable: bool = True
    parent: str | None = ROOT
    state: str = "Open"
    annotations: Mapping[str, str] = field(default_factory=dict)
    affinity: QueueAffinity | None = None  # spec.affinity (node groups)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class _Guarantee(Model):
    resource: Any = None


class _Spec(Model):
    passthrough = frozenset({"extendClusters", "type"})
    weight: Int32 = 0
    priority: Int32 = 0
    capability: Any = None
    deserved: Any = None
    guarantee: _Guarantee | None = None
    reclaimable: StrictBool | None = None
    parent: StrictStr | None = None
    state: StrictStr | None = None
    affinity: AffinitySpec | None = None


class _Status(Model):
    passthrough = frozenset(
        {"unknown", "pending", "running", "inqueue", "completed", "reservation", "allocated"}
    )
    state: StrictStr | None = None


class QueueManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _Spec = Field(default_factory=_Spec)
    status: _Status = Field(default_factory=_Status)


def _over(small: ResourceVector, big: ResourceVector) -> list[str]:
    return sorted(r for r, v in small.items() if v > big[r])


def _check_order(
    p: Problems, capability: ResourceVector | None, deserved: ResourceVector | None, guarantee: ResourceVector
) -> None:
    """capability >= deserved >= guarantee on each resource the smaller one names (Volcano's rule)."""
    if capability is not None and deserved is not None and (over := _over(deserved, capability)):
        p.add("spec.deserved", f"must not be more than spec.capability ({', '.join(over)})")
    if capability is not None and (over := _over(guarantee, capability)):
        p.add("spec.guarantee.resource", f"must not be more than spec.capability ({', '.join(over)})")
    if deserved is not None and (over := _over(guarantee, deserved)):
        p.add("spec.guarantee.resource", f"must not be more than spec.deserved ({', '.join(over)})")


def parse_queue(doc: Mapping[str, Any]) -> Queue:
    """Validate and default one Queue document; raises ManifestError naming every bad field."""
    m = validate_model(QueueManifest, doc)
    p = Problems()
    name = m.metadata.name
    check_name(p, "metadata.name", name, label=False)
    if name == ROOT:
        p.add("metadata.name", 'the queue "root" is the built-in top of the queue tree and cannot be applied')
    s = m.spec
    # Volcano's webhook treats a zero weight as unset.
    weight = s.weight or 1
    if not 1 <= weight <= MAX_WEIGHT:
        p.add("spec.weight", f"must be between 1 and {MAX_WEIGHT}, not {s.weight}")
    capability = parse_resources(p, "spec.capability", s.capability) if s.capability is not None else None
    deserved = parse_resources(p, "spec.deserved", s.deserved) if s.deserved is not None else None
    guarantee = parse_resources(p, "spec.guarantee.resource", s.guarantee.resource if s.guarantee else None)
    _check_order(p, capability, deserved, guarantee)
    state_field, state = ("spec.state", s.state) if s.state else ("status.state", m.status.state)
    state = state or "Open"
    if state not in STATES:
        p.add(state_field, f'must be "Open" or "Closed", not "{state}"')
    parent = s.parent or ROOT
    if parent != ROOT:
        check_name(p, "spec.parent", parent, label=False)
    if parent == name:
        p.add("spec.parent", f'queue "{name}" cannot be its own parent')
    affinity = affinity_of(p, s.affinity)
    budget_of(m.metadata.annotations, p)
    check_queue_policy(p, m.metadata.annotations)
    limits = m.metadata.annotations.get(NODE_GROUP_LIMITS)
    if limits is not None:
        try:
            for group, resources in node_group_limits(limits).items():
                parse_resources(p, f"{LIMITS_FIELD}.{group}", resources)
        except ValueError as exc:
            p.add(LIMITS_FIELD, str(exc))
    p.raise_if_any()
    return Queue(
        name=name,
        weight=weight,
        priority=s.priority,
        capability=capability,
        deserved=deserved,
        guarantee=guarantee,
        reclaimable=True if s.reclaimable is None else s.reclaimable,
        parent=parent,
        state=state,
        annotations=dict(m.metadata.annotations),
        affinity=affinity,
        raw=copy.deepcopy(dict(doc)),
    )


def default_queue() -> Queue:
    """The queue ``default`` that exists from the first start, as Volcano creates it."""
    raw = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": DEFAULT},
        "spec": {"weight": 1, "reclaimable": True},
    }
    return Queue(name=DEFAULT, raw=raw)


class QueueRefused(ValueError):
    """A job's queue does not take it; ``missing`` tells a queue that does not exist from one that
    exists but takes no jobs (closed, or not a leaf). The message names the field."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def check_job_queue(name: str, state: str | None, has_children: bool) -> None:
    """Jobs go only to an existing (``state`` not None), Open leaf queue."""
    if state is None:
        raise QueueRefused(f'spec.queue: queue "{name}" not found', missing=True)
    if state != "Open":
        raise QueueRefused(
            f'spec.queue: queue "{name}" is {state}; jobs can only be submitted to an Open queue'
        )
    if has_children:
        raise QueueRefused(f'spec.queue: queue "{name}" has child queues; jobs go only to leaf queues')
