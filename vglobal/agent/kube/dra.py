"""DRA devices the cluster offers, as the hub fits them: ``deviceclass/<class>`` per node.

ResourceSlices (``resource.k8s.io``) list each driver's devices per node; a device counts for
every DeviceClass whose selectors are the simple form ``device.driver == "<driver>"`` (a class
with any other CEL selector, and slices for all nodes or a node selector, are not counted). A
device that allows multiple allocations (KEP-5075) also offers its ``capacity`` as
``deviceclass/<class>/<capacity>``, shared by the claims that request part of it.
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
from vglobal.model.quantity import QuantityError, to_units
from vglobal.model.resources import ResourceVector

log = logging.getLogger(__name__)

GROUP_PATHS = ("/apis/resource.k8s.io/v1", "/apis/resource.k8s.io/v1beta1")
_DRIVER_IS = re.compile(r"""^\s*device\.driver\s*==\s*["']([^"']+)["']\s*$""")


@dataclass(frozen=True)
class DeviceInfo:
    """What a device says of itself beyond its name: whether claims share it (KEP-5075) and with
    what capacity, and its attributes (``domain`` is the driver's for an unqualified name)."""

    multiple: bool = False
    capacity: tuple[tuple[str, str], ...] = ()  # (capacity name, quantity)
    attributes: tuple[tuple[str, str, str], ...] = ()  # (domain, name, value as text)


@dataclass(frozen=True)
class Slice:
    name: str
    driver: str
    node: str  # "" : not one node's (allNodes / nodeSelector): not counted
    pool: str = ""
    names: tuple[str, ...] = ()  # its devices
    info: tuple[DeviceInfo, ...] = ()  # per device, as names (empty: none says more)

    @property
    def devices(self) -> int:
        return len(self.names)

    def about(self, i: int) -> DeviceInfo:
        return self.info[i] if i < len(self.info) else _PLAIN


_PLAIN = DeviceInfo()
Device = tuple[str, str, str]  # (driver, pool, device), as an allocation names it
Consumed = tuple[Device, str, int]  # a share of a device: (device, capacity name, units)


@dataclass(frozen=True)
class Want:
    """One device request of a claim: its class, count, attribute selectors and capacity share."""

    device_class: str
    count: int
    selectors: tuple[model_dra.Selector, ...] = ()
    capacity: tuple[tuple[str, int], ...] = ()  # (capacity name, units of capacity_resource)


Requests = tuple[tuple[str, Want], ...]  # (request name, what it wants)


@dataclass(frozen=True)
class Claim:
    name: str  # "<namespace>/<name>"
    allocated: tuple[Device, ...] = ()
    # what it asks for: read again from the cluster, so an agent restarted between making a pod's
    # claim and binding the pod still allocates it
    requests: Requests = ()
    consumed: tuple[Consumed, ...] = ()  # shares of multi-allocatable devices it holds


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


def device_info(driver: str, d: Mapping[str, Any]) -> DeviceInfo:
    """v1 has a device's fields on it, v1beta1 under ``basic``."""
    basic = d.get("basic")
    body: Mapping[str, Any] = basic if isinstance(basic, Mapping) else d
    capacity, attributes = body.get("capacity"), body.get("attributes")
    capacity = capacity if isinstance(capacity, Mapping) else {}
    attributes = attributes if isinstance(attributes, Mapping) else {}
    attrs = []
    for key, value in attributes.items():
        domain, _, name = str(key).rpartition("/")
        if isinstance(value, Mapping) and value:
            text = next(iter(value.values()))
            attrs.append((domain or driver, name, str(text).lower() if isinstance(text, bool) else str(text)))
    return DeviceInfo(
        multiple=body.get("allowMultipleAllocations") is True,
        capacity=tuple(
            (str(k), str(v["value"])) for k, v in capacity.items() if isinstance(v, Mapping) and "value" in v
        ),
        attributes=tuple(sorted(attrs)),
    )


def slice_record(obj: Mapping[str, Any]) -> Slice:
    spec = obj.get("spec") or {}
    driver = str(spec.get("driver", ""))
    devices = [d for d in spec.get("devices") or [] if isinstance(d, Mapping)]
    info = tuple(device_info(driver, d) for d in devices)
    return Slice(
        name=str((obj.get("metadata") or {}).get("name", "")),
        driver=driver,
        node=str(spec.get("nodeName") or ""),
        pool=str((spec.get("pool") or {}).get("name", "")),
        names=tuple(str(d.get("name", "")) for d in devices),
        info=info if any(i != _PLAIN for i in info) else (),
    )


def claim_record(obj: Mapping[str, Any]) -> Claim:
    meta = obj.get("metadata") or {}
    results = (
        (((obj.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    ) or []
    consumed = []
    for r in results:
        device = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        for cap, qty in (r.get("consumedCapacity") or {}).items():
            try:
                consumed.append((device, str(cap), to_units(f"{model_dra.RESOURCE_PREFIX}x/{cap}", qty)))
            except QuantityError:
                log.warning("claim %s: bad consumedCapacity %s", meta.get("name"), cap)
    return Claim(
        name=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        allocated=tuple((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))) for r in results),
        requests=claim_requests({**obj, "kind": model_dra.CLAIM_KIND}),
        consumed=tuple(consumed),
    )


def claim_requests(doc: Mapping[str, Any]) -> Requests:
    """Each device request of a claim or template: its name and what it wants (as the hub
    counted it)."""
    out = []
    requests = ((model_dra.claim_spec(doc) or {}).get("devices") or {}).get("requests") or []
    for r in requests:
        if not isinstance(r, Mapping):
            continue
        exactly = r.get("exactly")
        body: Mapping[str, Any] = exactly if isinstance(exactly, Mapping) else r
        device_class = body.get("deviceClassName")
        if not isinstance(device_class, str) or not device_class:
            continue
        count = body.get("count", 1) if body.get("allocationMode", "ExactCount") == "ExactCount" else 1
        want = Want(
            device_class,
            count if isinstance(count, int) and count > 0 else 1,
            model_dra.request_selectors(Problems(), "", body),
            tuple(sorted(model_dra.capacity_requests(Problems(), "", body).items())),
        )
        out.append((str(r.get("name")), want))
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
            for info in s.info:
                for cap, units in _capacity(name, info):
                    per[cap] = per.get(cap, 0) + units
    return {node: ResourceVector(v) for node, v in out.items() if v}


def _capacity(device_class: str, info: DeviceInfo) -> Iterable[tuple[str, int]]:
    """A shared device's capacity as ``deviceclass/<class>/<name>`` units."""
    if not info.multiple:
        return
    for cap, qty in info.capacity:
        key = model_dra.capacity_resource(device_class, cap)
        try:
            yield key, to_units(key, qty)
        except QuantityError:
            log.warning("device capacity %s: bad quantity %r, not counted", key, qty)


def claimed(
    slices: Iterable[Slice],
    classes: Iterable[DeviceClass],
    taken: Iterable[Device],
    consumed: Iterable[Consumed] = (),
) -> dict[str, ResourceVector]:
    """Per node: the devices allocated claims hold, by class (as ``node_devices`` counts them): a
    whole device, or the capacity its shares consumed."""
    slices = list(slices)
    where = {(s.driver, s.pool, d): (s, s.about(i)) for s in slices if s.node for i, d in enumerate(s.names)}
    shared = {device for device, _, _ in consumed}
    held = [where[t][0] for t in taken if t in where and t not in shared]
    out = node_devices([Slice(s.name, s.driver, s.node, s.pool, ("",)) for s in held], classes)
    drivers: dict[str, list[str]] = {}
    for c in classes:
        if c.driver:
            drivers.setdefault(c.driver, []).append(c.name)
    for device, cap, units in consumed:
        if device not in where:
            continue
        s = where[device][0]
        extra = {model_dra.capacity_resource(name, cap): units for name in drivers.get(s.driver, ())}
        out[s.node] = out.get(s.node, ResourceVector()) + extra
    return out


def matches(info: DeviceInfo, selectors: Iterable[model_dra.Selector]) -> bool:
    return all(sel in info.attributes for sel in selectors)


def pick(
    slices: Iterable[Slice],
    classes: Iterable[DeviceClass],
    node: str,
    want: Want,
    taken: set[Device],
    used: Mapping[tuple[Device, str], int] | None = None,
) -> list[Device] | None:
    """``want.count`` devices of the class on the node whose attributes match its selectors, None
    if too few: devices no claim holds (by name), or for a capacity share, multi-allocatable
    devices with that much of each capacity left after ``used`` (device, capacity -> units)."""
    drivers = {c.driver for c in classes if c.name == want.device_class and c.driver}
    free = []
    for s in sorted(slices, key=lambda s: s.name):
        if s.node != node or s.driver not in drivers:
            continue
        for i, d in enumerate(s.names):
            device, info = (s.driver, s.pool, d), s.about(i)
            if not matches(info, want.selectors):
                continue
            if not want.capacity:
                if device not in taken:
                    free.append(device)
            elif info.multiple and _room(want, info, device, used or {}):
                free.append(device)
    return free[: want.count] if len(free) >= want.count else None


def _room(want: Want, info: DeviceInfo, device: Device, used: Mapping[tuple[Device, str], int]) -> bool:
    total = dict(_capacity(want.device_class, info))
    for cap, units in want.capacity:
        left = total.get(model_dra.capacity_resource(want.device_class, cap), 0) - used.get((device, cap), 0)
        if left < units:
            return False
    return True
