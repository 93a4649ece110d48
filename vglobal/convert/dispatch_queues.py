"""A queue as messages carry it to an agent: its node-group affinity, and the chain of a Dispatch
(the queue and its ancestors with the limits the dispatcher's latest cycle gave them and what each
holds on the other clusters), built alike by the hub and the simulator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.api.v1 import agent_pb2, common_pb2
from vglobal.model.queue_affinity import NODE_GROUP_LIMITS, QueueAffinity, affinity_from_manifest
from vglobal.model.records import QueueRow


def queue_affinity(aff: QueueAffinity) -> common_pb2.QueueAffinity:
    return common_pb2.QueueAffinity(
        node_group_affinity=common_pb2.NodeGroupTerms(required=aff.required, preferred=aff.preferred),
        node_group_anti_affinity=common_pb2.NodeGroupTerms(
            required=aff.anti_required, preferred=aff.anti_preferred
        ),
    )


def queue_affinity_of(msg: common_pb2.QueueAffinity) -> QueueAffinity:
    aff, anti = msg.node_group_affinity, msg.node_group_anti_affinity
    return QueueAffinity(
        tuple(aff.required), tuple(aff.preferred), tuple(anti.required), tuple(anti.preferred)
    )


def dispatch_queues(queue: str, rows: Mapping[str, QueueRow], cluster: str) -> list[agent_pb2.DispatchQueue]:
    """The queue and its ancestors up to root, as a Dispatch carries them to ``cluster``'s agent:
    with the limits the dispatcher's latest cycle stored (row.status; the spec's before any
    cycle) and what the queue holds on the other clusters as that cycle counted it."""
    out: list[agent_pb2.DispatchQueue] = []
    name: str | None = queue
    while name and name != "root" and name in rows and len(out) < len(rows):
        row = rows[name]
        affinity = affinity_from_manifest(row.manifest)
        out.append(
            dispatch_queue(
                name,
                row.parent,
                row.weight,
                affinity,
                str(row.annotations.get(NODE_GROUP_LIMITS, "")),
                limits=queue_limits(row.status, row.capability, row.guarantee, row.deserved),
                cluster=cluster,
            )
        )
        name = row.parent
    return out


def queue_limits(
    status: Mapping[str, Any],
    capability: Mapping[str, int] | None,
    guarantee: Mapping[str, int],
    deserved: Mapping[str, int] | None,
) -> dict[str, Any]:
    """A queue's figures as a Dispatch carries them: the latest cycle's (``status``, as the
    dispatcher stores it with the queue) where there is one, else the spec's."""
    out = {
        "capability": status.get("capability", capability),
        "guarantee": dict(guarantee),
        "deserved": status.get("deserved", deserved),
        "clusters": status.get("clusters") or {},
    }
    if "allowance" in status:  # the room beyond gangs, split among the clusters
        out["allowance"], out["here"] = status["allowance"], status.get("here") or {}
    return out


def dispatch_queue(
    name: str,
    parent: str | None,
    weight: int,
    affinity: QueueAffinity | None,
    node_group_limits: str,
    *,
    limits: Mapping[str, Any],
    cluster: str,
) -> agent_pb2.DispatchQueue:
    """One queue of a Dispatch's chain; ``elsewhere`` is what it holds on the other clusters, and
    with a split room, ``allowance`` and ``here`` what ``cluster`` may add and holds."""
    elsewhere: dict[str, int] = {}
    for c, units in limits["clusters"].items():
        if c != cluster:
            for r, v in units.items():
                elsewhere[r] = elsewhere.get(r, 0) + int(v)
    cap, deserved, guarantee = limits["capability"], limits["deserved"], limits["guarantee"]
    split = cap is not None and "allowance" in limits
    return agent_pb2.DispatchQueue(
        name=name,
        parent=parent or "",
        weight=weight,
        affinity=queue_affinity(affinity) if affinity is not None else None,
        node_group_resource_limits=node_group_limits,
        capability=None if cap is None else agent_pb2.Units(values=cap),
        guarantee=agent_pb2.Units(values=guarantee) if guarantee else None,
        deserved=None if deserved is None else agent_pb2.Units(values=deserved),
        elsewhere=agent_pb2.Units(values=elsewhere),
        allowance=agent_pb2.Units(values=limits["allowance"].get(cluster, {})) if split else None,
        here=agent_pb2.Units(values=limits["here"].get(cluster, {})) if split else None,
    )
