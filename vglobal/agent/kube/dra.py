"""DRA devices the cluster offers, as the hub fits them: ``deviceclass/<class>`` per node.

ResourceSlices (``resource.k8s.io``) list each driver's devices per node; a device counts for
every DeviceClass whose selectors are the simple form ``device.driver == "<driver>"`` (a class
with any other CEL selector, and slices for all nodes or a node selector, are not counted).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.model import dra as model_dra
from vglobal.model.dra import UNIT, device_resource
from vglobal.model.errors import Problems
from vglobal.model.resources import ResourceVector

log = logging.getLogger(__name__)

GROUP_PATHS = ("/apis/resource.k8s.io/v1", "/apis/resource.k8s.io/v1beta1")
_DRIVER_IS = re.compile(r"""^\s*device\.driver\s*==\s*["']([^"']+)["']\s*$""")


@dataclass(frozen=True)
class Slice:
    name: str
    driver: str
    node: str  # "" : not one node's (allNodes / nodeSelector): not counted
    pool: str = ""
    names: tuple[str, ...] = ()  # its devices

    @property
    def devices(self) -> int:
        return len(self.names)


Device = tuple[str, str, str]  # (driver, pool, device), as an allocation names it


Requests = tuple[tuple[str, str, int], ...]  # (request name, device class, count)


@dataclass(frozen=True)
class Claim:
    name: str  # "<namespace>/<name>"
    allocated: tuple[Device, ...] = ()
    # what it asks for: read again from the cluster, so an agent restarted between making a pod's
    # claim and binding the pod still allocates it
    requests: Requests = ()


@dataclass(frozen=True)
class DeviceClass:
    name: str
    driver: str  # "" : a selector we do not read


def served_version(api: KubeApi) -> str | None:
    """The resource.k8s.io group version the API serves ResourceSlices at, None if none."""
    for path in GROUP_PATHS:
        try:
            doc = api.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                continue
            raise
        if any(r.get("name") == "resourceslices" for r in doc.get("resources") or []):
            return path
    return None


def slice_record(obj: Mapping[str, Any]) -> Slice:
    spec = obj.get("spec") or {}
    return Slice(
        name=str((obj.get("metadata") or {}).get("name", "")),
        driver=str(spec.get("driver", "")),
        node=str(spec.get("nodeName") or ""),
        pool=str((spec.get("pool") or {}).get("name", "")),
        names=tuple(str(d.get("name", "")) for d in spec.get("devices") or [] if isinstance(d, Mapping)),
    )


def claim_record(obj: Mapping[str, Any]) -> Claim:
    meta = obj.get("metadata") or {}
    results = (
        (((obj.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    ) or []
    return Claim(
        name=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        allocated=tuple((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results),
        requests=claim_requests({**obj, "kind": model_dra.CLAIM_KIND}),
    )


def claim_requests(doc: Mapping[str, Any]) -> Requests:
    """Each device request of a claim or template: its name, device class and count (the
    devices the hub counted for it)."""
    out = []
    requests = ((model_dra.claim_spec(doc) or {}).get("devices") or {}).get("requests") or []
    for r in requests:
        if not isinstance(r, Mapping):
            continue
        body = r.get("exactly") if isinstance(r.get("exactly"), Mapping) else r
        devices = model_dra.claim_devices(
            Problems(), "", {"kind": model_dra.CLAIM_KIND, "spec": {"devices": {"requests": [body]}}}
        )
        for resource, units in devices.items():
            out.append((str(r.get("name")), resource.removeprefix(model_dra.RESOURCE_PREFIX), units // UNIT))
    return tuple(out)


def class_record(obj: Mapping[str, Any]) -> DeviceClass:
    name = str((obj.get("metadata") or {}).get("name", ""))
    selectors = (obj.get("spec") or {}).get("selectors") or []
    drivers = set()
    for s in selectors:
        match = _DRIVER_IS.match(str(((s or {}).get("cel") or {}).get("expression", "")))
        drivers.add(match.group(1) if match else "")
    if len(drivers) != 1 or "" in drivers:
        log.info('DeviceClass %s: only a single device.driver == "..." selector is read; not counted', name)
        return DeviceClass(name, "")
    return DeviceClass(name, drivers.pop())


def node_devices(slices: Iterable[Slice], classes: Iterable[DeviceClass]) -> dict[str, ResourceVector]:
    """Per node: its devices by class, as allocatable ``deviceclass/<class>``."""
    by_driver: dict[str, list[str]] = {}
    for c in classes:
        if c.driver:
            by_driver.setdefault(c.driver, []).append(c.name)
    out: dict[str, dict[str, int]] = {}
    for s in slices:
        if not s.node:
            continue
        per = out.setdefault(s.node, {})
        for name in by_driver.get(s.driver, ()):
            key = device_resource(name)
            per[key] = per.get(key, 0) + s.devices * UNIT
    return {node: ResourceVector(v) for node, v in out.items() if v}


def claimed(
    slices: Iterable[Slice], classes: Iterable[DeviceClass], taken: Iterable[Device]
) -> dict[str, ResourceVector]:
    """Per node: the devices allocated claims hold, by class (as ``node_devices`` counts them)."""
    where = {(s.driver, s.pool, d): s for s in slices if s.node for d in s.names}
    held = [where[t] for t in taken if t in where]
    return node_devices([Slice(s.name, s.driver, s.node, s.pool, ("",)) for s in held], classes)


def pick(
    slices: Iterable[Slice],
    classes: Iterable[DeviceClass],
    node: str,
    device_class: str,
    count: int,
    taken: set[Device],
) -> list[Device] | None:
    """``count`` devices of the class on the node that no claim holds (by name), None if too few."""
    drivers = {c.driver for c in classes if c.name == device_class and c.driver}
    free = [
        (s.driver, s.pool, d)
        for s in sorted(slices, key=lambda s: s.name)
        if s.node == node and s.driver in drivers
        for d in s.names
        if (s.driver, s.pool, d) not in taken
    ]
    return free[:count] if len(free) >= count else None
