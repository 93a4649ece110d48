"""A member cluster's report (its stored row) as admission sees it: each node's free capacity,
counted only where new pods may go, and its HyperNodes. The dispatcher caches these between cycles
(dispatch/clusters.py); a HyperJob's split at submit reads them afresh (hyperjobs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.admission.snapshot import HyperNodeSnap, NodeSnap
from vglobal.model.records import ClusterRow
from vglobal.model.resources import ResourceVector


def usable(node: Mapping[str, Any]) -> bool:
    """A node new pods may go to: not cordoned, no NoSchedule or NoExecute taint."""
    return not node.get("unschedulable") and not any(
        t.get("effect") in ("NoSchedule", "NoExecute") for t in node.get("taints", [])
    )


def node_snap(node: Mapping[str, Any], free: Mapping[str, int] | None) -> NodeSnap:
    """A node of the inventory with what its cluster reports free on it (none if it is not usable)."""
    return NodeSnap(
        name=node["name"],
        free=ResourceVector(free or {}) if usable(node) else ResourceVector(),
        allocatable=ResourceVector(node.get("allocatable", {})),
        labels=node.get("labels", {}),
    )


def hypernode_snaps(row: ClusterRow) -> tuple[HyperNodeSnap, ...]:
    return tuple(
        HyperNodeSnap(
            name=h["name"],
            tier=int(h["tier"]),
            parent=h.get("parent") or None,
            nodes=tuple(h.get("nodes", ())),
        )
        for h in row.hypernodes
    )
