"""A cluster autoscaler, reduced to what a caller of it sees: node pools that add Nodes of their
shape, up to their maximum, ``delay`` seconds after they decide to.

It acts on two things, as the Cluster Autoscaler does: a ProvisioningRequest
(``autoscaling.x-k8s.io/v1beta1``, its pod sets read from the PodTemplates it names) is Accepted at
once and, if its pods fit the free room of today's nodes plus new nodes the pools can still add,
Provisioned once those nodes are up (else Failed, with the reason); and unbound pods held by a
scheduling gate, fitted the same way each time they change (pods that fit today's free room, or
nodes already coming, add nothing).
New nodes are ``<pool>-<index>`` and carry the pool's labels and ``vglobal.io/node-pool``. It never
binds a pod: the scheduler that owns the pods does, once the nodes are there.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.crud import Api
from tests.kubeapi.kinds import NODES, PODS, Kind
from tests.kubeapi.status import ApiError
from tests.kubeapi.store import ADDED, DELETED, Obj
from vglobal.model.resources import ResourceVector

PODTEMPLATES = Kind("", "v1", "podtemplates", "PodTemplate", True)
PROVISIONING_REQUESTS = Kind(
    "autoscaling.x-k8s.io",
    "v1beta1",
    "provisioningrequests",
    "ProvisioningRequest",
    True,
    frozenset({"status"}),
    short_names=("provreq",),
    custom=True,
)
POOL_LABEL = "vglobal.io/node-pool"
_ONE_POD = ResourceVector({"pods": 1})


@dataclass
class EmulatedPool:
    """``node``: a Node manifest of the pool's shape (its name is replaced for each new node)."""

    name: str
    node: Obj
    max: int
    delay: float
    size: int = 0  # nodes it has, up or coming
    coming: list[ResourceVector] = field(default_factory=list)  # room of nodes not up yet, for others

    @property
    def allocatable(self) -> ResourceVector:
        return ResourceVector.from_quantities(self.node["status"]["allocatable"])


def pod_request(spec: Obj) -> ResourceVector:
    total = _ONE_POD
    for c in spec.get("containers") or []:
        total = total + ResourceVector.from_quantities((c.get("resources") or {}).get("requests") or {})
    return total


class Autoscaler:
    def __init__(self, api: Api, loop: asyncio.AbstractEventLoop, pools: Iterable[EmulatedPool]) -> None:
        self.api, self.store, self.loop = api, api.store, loop
        self.pools = sorted(pools, key=lambda p: p.name)
        for p in self.pools:
            p.size = sum(1 for e in self.store.items(NODES) if _pool(e.obj) == p.name)
        self._armed = False
        self.store.listeners.append(self._on_change)

    def _on_change(self, kind: Kind, type_: str, obj: Obj, old: Obj | None) -> None:
        if kind is PROVISIONING_REQUESTS and type_ == ADDED:
            meta = obj["metadata"]
            self.loop.call_soon(self._provision, meta["namespace"], meta["name"])
        elif kind is PODS and type_ != DELETED and _gated(obj) and not self._armed:
            self._armed = True
            self.loop.call_later(0.1, self._scan_gated)  # a gang's pods come in a burst

    # -- deciding --------------------------------------------------------------------------------
    def _free(self) -> list[ResourceVector]:
        """Per Ready node, its allocatable less what the pods bound to it request."""
        used: dict[str, ResourceVector] = {}
        for e in self.store.items(PODS):
            spec, phase = e.obj.get("spec") or {}, (e.obj.get("status") or {}).get("phase")
            if spec.get("nodeName") and phase not in ("Succeeded", "Failed"):
                used[spec["nodeName"]] = used.get(spec["nodeName"], ResourceVector()) + pod_request(spec)
        out = []
        for e in self.store.items(NODES):
            name = e.obj["metadata"]["name"]
            alloc = ResourceVector.from_quantities((e.obj.get("status") or {}).get("allocatable") or {})
            out.append(alloc - used.get(name, ResourceVector()))
        return out

    def _fit(self, pods: list[ResourceVector]) -> dict[str, list[ResourceVector]] | None:
        """New nodes per pool (their free room once the pods are on them) so ``pods`` fit beside
        today's free room and the nodes already coming; None when the pools cannot hold them."""
        rows = self._free() + [f for p in self.pools for f in p.coming]
        new: dict[str, list[ResourceVector]] = {}
        room = {p.name: p.max - p.size for p in self.pools}
        for need in sorted(pods, key=lambda v: sorted(v.items()), reverse=True):
            if _first_fit(rows, need) or any(_first_fit(free, need) for free in new.values()):
                continue
            pool = next((p for p in self.pools if room[p.name] > 0 and need.fits_in(p.allocatable)), None)
            if pool is None:
                return None
            room[pool.name] -= 1
            new.setdefault(pool.name, []).append(pool.allocatable - need)
        return new

    def _add(
        self,
        new: dict[str, list[ResourceVector]],
        then: tuple[str, str] | None = None,
        *,
        whole: bool = False,
    ) -> None:
        """Ask the pools for the nodes; each comes up after its pool's delay. ``whole``: the pods
        are fitted again at every scan, so a coming node offers all its room."""
        pools = {p.name: p for p in self.pools}
        longest = 0.0
        for name, frees in new.items():
            pool = pools[name]
            for free in frees:
                index = pool.size
                pool.size += 1
                room = pool.allocatable if whole else free
                pool.coming.append(room)
                self.loop.call_later(pool.delay, self._node_up, pool, index, room)
                longest = max(longest, pool.delay)
        if then is not None:
            self.loop.call_later(longest, self._set_condition, *then, "Provisioned", "True", "Provisioned")

    def _node_up(self, pool: EmulatedPool, index: int, free: ResourceVector) -> None:
        node = copy.deepcopy(pool.node)
        name = f"{pool.name}-{index}"
        node["metadata"]["name"] = name
        node["metadata"]["labels"] = {**node["metadata"]["labels"], "kubernetes.io/hostname": name}
        node["metadata"].pop("uid", None)
        node["metadata"].pop("resourceVersion", None)
        node["metadata"].pop("creationTimestamp", None)
        if free in pool.coming:
            pool.coming.remove(free)
        with contextlib.suppress(ApiError):  # a node of that name exists already (a test made it)
            self.api.create(NODES, "", node)

    # -- ProvisioningRequests --------------------------------------------------------------------
    def _provision(self, namespace: str, name: str) -> None:
        pr = self.store.get(PROVISIONING_REQUESTS, namespace, name)
        if pr is None:
            return
        pods: list[ResourceVector] = []
        for s in (pr.get("spec") or {}).get("podSets") or []:
            ref = (s.get("podTemplateRef") or {}).get("name", "")
            tmpl = self.store.get(PODTEMPLATES, namespace, ref)
            if tmpl is None:
                self._set_condition(
                    namespace, name, "Failed", "True", "PodTemplateNotFound", f"no PodTemplate {ref}"
                )
                return
            spec = (tmpl.get("template") or {}).get("spec") or {}
            pods += [pod_request(spec)] * int(s.get("count") or 0)
        new = self._fit(pods)
        if new is None:
            why = "the node pools cannot add the nodes its pods need"
            self._set_condition(namespace, name, "Failed", "True", "NotProvisioned", why)
            return
        self._set_condition(namespace, name, "Accepted", "True", "Accepted")
        self._add(new, then=(namespace, name))

    def _set_condition(
        self, namespace: str, name: str, type_: str, status: str, reason: str, message: str = ""
    ) -> None:
        pr = self.store.get(PROVISIONING_REQUESTS, namespace, name)
        if pr is None:
            return
        conditions = [c for c in (pr.get("status") or {}).get("conditions") or [] if c.get("type") != type_]
        conditions.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": rfc3339(),
            }
        )
        with contextlib.suppress(ApiError):
            self.api.update(
                PROVISIONING_REQUESTS, namespace, name, {**pr, "status": {"conditions": conditions}}, "status"
            )

    # -- gated pods ------------------------------------------------------------------------------
    def _scan_gated(self) -> None:
        self._armed = False
        # every gated pod each time, against the nodes already coming for them: nothing twice
        waiting = [pod_request(e.obj.get("spec") or {}) for e in self.store.items(PODS) if _gated(e.obj)]
        new = self._fit(waiting) if waiting else None
        if new:  # None: the pools cannot hold them; a real autoscaler tries again later
            self._add(new, whole=True)


def _first_fit(rows: list[ResourceVector], need: ResourceVector) -> bool:
    for i, free in enumerate(rows):
        if need.fits_in(free):
            rows[i] = free - need
            return True
    return False


def _gated(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("schedulingGates"))
        and not spec.get("nodeName")
        and not pod["metadata"].get("deletionTimestamp")
    )


def _pool(node: Obj) -> str:
    return str((node["metadata"].get("labels") or {}).get(POOL_LABEL, ""))
