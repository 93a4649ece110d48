"""What the informers saw: nodes and every pod of the cluster, and what the pods hold per node.

Owned by the agent's main loop: informer changes are applied here one at a time (``apply``), so
reads need no lock. Every unfinished pod placed on a node counts against that node, whoever
created it; a pod leaves the count when it finishes or is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import replace
from typing import Any

from vglobal.agent.kube.dra import claimed, node_devices
from vglobal.agent.kube.informer import Change
from vglobal.agent.kube.records import NodeRecord, PodRecord
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import NodeSpec

POD_SLOT = ResourceVector({"pods": 1})
Key = tuple[str, str]


class ClusterCache:
    def __init__(self, on_pod: Callable[[PodRecord | None, PodRecord | None], None]) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[Key, PodRecord] = {}
        self.used: dict[str, ResourceVector] = {}  # per node: unfinished pods' requests + slots
        self.node_version = 0  # bumped when the inventory (not pod usage) changes
        self.pod_version = 0  # bumped by every pod change
        self._reserved: tuple[tuple[int, int], dict[str, ResourceVector]] | None = None
        self._specs: tuple[NodeSpec, ...] | None = None
        self._on_pod = on_pod  # (before, after) for every pod change; None = absent
        # DRA: ResourceSlices and DeviceClasses by name, and what they give each node.
        self.dra: dict[str, dict[str, Any]] = {
            k: {} for k in ("resourceslices", "deviceclasses", "resourceclaims")
        }
        self.devices: dict[str, ResourceVector] = {}
        self.claimed: dict[str, ResourceVector] = {}  # per node: devices allocated claims hold

    # ---- applying informer changes

    def apply(self, change: Change[Any]) -> None:
        if change.source == "nodes":
            self._apply_nodes(change)
        elif change.source == "pods":
            self._apply_pods(change)
        elif change.source in self.dra:
            self._apply_dra(change)

    def _apply_dra(self, change: Change[Any]) -> None:
        held = self.dra[change.source]
        if change.kind == "replace":
            held.clear()
            held.update({x.name: x for x in change.items})
        elif change.item is not None:
            if change.kind == "delete":
                held.pop(change.item.name, None)
            else:
                held[change.item.name] = change.item
        slices, classes = self.dra["resourceslices"].values(), self.dra["deviceclasses"].values()
        claims = self.dra["resourceclaims"].values()
        taken = [d for c in claims for d in c.allocated]
        self.claimed = claimed(slices, classes, taken, [u for c in claims for u in c.consumed])
        devices = node_devices(slices, classes)
        if devices != self.devices:
            self.devices = devices
            self._nodes_changed()

    def _apply_nodes(self, change: Change[Any]) -> None:
        if change.kind == "replace":
            fresh = {n.name: n for n in change.items}
            if fresh != self.nodes:
                self.nodes = fresh
                self._nodes_changed()
            return
        rec = change.item
        assert isinstance(rec, NodeRecord)
        if change.kind == "delete":
            if self.nodes.pop(rec.name, None) is not None:
                self._nodes_changed()
        elif self.nodes.get(rec.name) != rec:
            self.nodes[rec.name] = rec
            self._nodes_changed()

    def _nodes_changed(self) -> None:
        self._specs = None
        self.node_version += 1

    def _apply_pods(self, change: Change[Any]) -> None:
        if change.kind == "replace":
            fresh = {p.key: p for p in change.items}
            for key in [k for k in self.pods if k not in fresh]:
                self._set(key, None)
            for key, rec in fresh.items():
                self._set(key, rec)
            return
        pod = change.item
        assert isinstance(pod, PodRecord)
        self._set(pod.key, None if change.kind == "delete" else pod)

    def _set(self, key: Key, rec: PodRecord | None) -> None:
        before = self.pods.get(key)
        if before == rec:
            return
        self.pod_version += 1
        if before is not None and before.holds_node and before.node is not None:
            self.used[before.node] = self.used.get(before.node, ResourceVector()) - before.request - POD_SLOT
        if rec is None:
            self.pods.pop(key, None)
        else:
            self.pods[key] = rec
            if rec.holds_node and rec.node is not None:
                self.used[rec.node] = self.used.get(rec.node, ResourceVector()) + rec.request + POD_SLOT
        self._on_pod(before, rec)

    # ---- reads

    def specs(self) -> tuple[NodeSpec, ...]:
        if self._specs is None:
            self._specs = tuple(self._spec(n) for n in sorted(self.nodes))
        return self._specs

    def _spec(self, name: str) -> NodeSpec:
        spec = self.nodes[name].spec
        extra = self.devices.get(name)
        return spec if extra is None else replace(spec, allocatable=spec.allocatable + extra)

    def uuids(self, node: str) -> tuple[str, ...]:
        rec = self.nodes.get(node)
        return rec.uuids if rec is not None else ()

    def free(self, pending: Mapping[str, ResourceVector]) -> dict[str, ResourceVector]:
        """Per node: allocatable minus what its pods hold and what binds in flight will take."""
        empty = ResourceVector()
        return {
            name: rec.spec.allocatable
            + self.devices.get(name, empty)
            - self.claimed.get(name, empty)
            - self.used.get(name, empty)
            - pending.get(name, empty)
            for name, rec in self.nodes.items()
        }

    def reserved(
        self, active: Container[str], active_version: int, matched: Container[Key] = ()
    ) -> dict[str, ResourceVector]:
        """Per node: what pods other than the agent's current ones hold (other schedulers'
        pods, daemon sets, the agent's own pods that are being deleted). ``matched`` are the
        pods of workload objects that stand for the agent's pods. ``active_version`` changes
        whenever ``active`` or ``matched`` does; the answer is kept until either version moves."""
        key = (self.pod_version, active_version)
        if self._reserved is not None and self._reserved[0] == key:
            return self._reserved[1]
        out: dict[str, ResourceVector] = {}
        for rec in self.pods.values():
            if rec.holds_node and rec.node is not None and rec.ours not in active and rec.key not in matched:
                out[rec.node] = out.get(rec.node, ResourceVector()) + rec.request + POD_SLOT
        self._reserved = (key, out)
        return out
