"""Simulated member clusters (``vglobal.io/v1alpha1`` SimCluster): node groups expanded into nodes.

The input of the sim backend (and so of ``vglobal sim``), not a kind the hub takes: its files are
read with the hub's kinds plus this one (``parse_sim_manifests``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import Field, StrictBool, StrictInt, StrictStr

from vglobal.model.dra import capacity_resource, device_resource
from vglobal.model.duration import parse_duration
from vglobal.model.errors import ManifestError, Problems, key_path
from vglobal.model.k8s import OBJECT_FIELDS, Metadata, Model, check_name, parse_resources, validate_model
from vglobal.model.manifests import KINDS, SCHEMAS, Manifest, parse_documents
from vglobal.model.quantity import QuantityError, to_units
from vglobal.model.resources import ResourceVector
from vglobal.model.topology_sources import discovery_plan

API_VERSION = "vglobal.io/v1alpha1"
KIND = "SimCluster"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_MAX_PODS = 110  # the kubelet's default --max-pods
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, kw_only=True)
class GpuSpec:
    count: int
    memory_mib: int = 0
    model: str = ""
    mig: bool = False


@dataclass(frozen=True, kw_only=True)
class SimNode:
    name: str
    allocatable: ResourceVector
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    gpus: GpuSpec | None = None


@dataclass(frozen=True, kw_only=True)
class SimPool:
    """A node group that grows on demand (``autoscale``): new nodes are ``<group>-<index>`` like
    the group's first ``count``, and come up ``provision_seconds`` after they are asked for."""

    name: str
    node: SimNode  # the shape of a new node (its name and hostname label are set when it is added)
    count: int
    max: int
    provision_seconds: float


@dataclass(frozen=True, kw_only=True)
class SimCluster:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    nodes: tuple[SimNode, ...] = ()
    pools: tuple[SimPool, ...] = ()
    hyper_nodes: tuple[dict[str, Any], ...] = ()
    discovery: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class _Gpus(Model):
    count: StrictInt = 0
    memory_mib: StrictInt = Field(0, alias="memoryMiB")
    model: StrictStr = ""
    mig: StrictBool = False


class _Taint(Model):
    key: StrictStr = ""
    value: StrictStr = ""
    effect: StrictStr = ""


class _Devices(Model):
    device_class: StrictStr = Field("", alias="deviceClass")
    count: StrictInt = 0
    # each device shared by claims (allowMultipleAllocations) with this consumable capacity
    capacity: dict[StrictStr, StrictStr | StrictInt] = Field(default_factory=dict)


class _Autoscale(Model):
    max: StrictInt = 0
    provision_delay: StrictStr = Field("0s", alias="provisionDelay")


class _Group(Model):
    name: StrictStr = ""
    count: StrictInt = 1
    allocatable: Any = None
    labels: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    taints: list[_Taint] = Field(default_factory=list)
    gpus: _Gpus | None = None
    devices: list[_Devices] = Field(default_factory=list)  # DRA devices per node, by DeviceClass
    autoscale: _Autoscale | None = None


class _Spec(Model):
    node_groups: list[_Group] = Field(default_factory=list)
    hyper_nodes: list[dict[str, Any]] = Field(default_factory=list)
    hyper_node_discovery: dict[str, Any] | None = None
    network_topology_types: dict[str, Any] | None = None


class SimClusterManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _Spec = Field(default_factory=_Spec)


def _group_nodes(p: Problems, base: str, g: _Group) -> list[SimNode]:
    check_name(p, f"{base}.name", g.name, label=True)
    if g.count < 0:
        p.add(f"{base}.count", "must be >= 0")
    alloc = parse_resources(p, f"{base}.allocatable", g.allocatable)
    gpus: GpuSpec | None = None
    if g.gpus is not None:
        if g.gpus.count < 0:
            p.add(f"{base}.gpus.count", "must be >= 0")
        if g.gpus.memory_mib < 0:
            p.add(f"{base}.gpus.memoryMiB", "must be >= 0")
        gpus = GpuSpec(count=g.gpus.count, memory_mib=g.gpus.memory_mib, model=g.gpus.model, mig=g.gpus.mig)
        if GPU_RESOURCE not in alloc:
            alloc = alloc + {GPU_RESOURCE: max(g.gpus.count, 0) * 1000}
        elif alloc[GPU_RESOURCE] != g.gpus.count * 1000:
            p.add(
                f"{base}.gpus.count",
                f"{g.gpus.count} GPUs, but allocatable {GPU_RESOURCE} is "
                f"{alloc.to_quantities()[GPU_RESOURCE]}",
            )
    if "pods" not in alloc:
        alloc = alloc + {"pods": DEFAULT_MAX_PODS}
    alloc = alloc + _devices(p, base, g.devices)
    taints: list[Mapping[str, str]] = []
    for j, t in enumerate(g.taints):
        if not t.key:
            p.add(f"{base}.taints[{j}].key", "required")
        if t.effect not in TAINT_EFFECTS:
            p.add(
                f"{base}.taints[{j}].effect", f'must be one of {", ".join(TAINT_EFFECTS)}, not "{t.effect}"'
            )
        taints.append({"key": t.key, "value": t.value, "effect": t.effect})
    for key in g.labels:
        if not key:
            p.add(key_path(f"{base}.labels", key), "a label key must not be empty")
    shape = SimNode(name=g.name, allocatable=alloc, labels=dict(g.labels), taints=tuple(taints), gpus=gpus)
    return [pool_node(shape, f"{g.name}-{n}") for n in range(max(g.count, 0))]


def pool_node(shape: SimNode, name: str) -> SimNode:
    """A node of a group's shape, named (its hostname label too)."""
    return SimNode(
        name=name,
        allocatable=shape.allocatable,
        labels={**shape.labels, HOSTNAME_LABEL: name},
        taints=shape.taints,
        gpus=shape.gpus,
    )


def _group_pool(p: Problems, base: str, g: _Group) -> SimPool | None:
    """The group's ``autoscale: {max, provisionDelay}``, if it has one."""
    if g.autoscale is None:
        return None
    a = g.autoscale
    if a.max < g.count:
        p.add(f"{base}.autoscale.max", f"must be >= count ({g.count}), not {a.max}")
    try:
        delay = parse_duration(a.provision_delay)
    except ValueError as e:
        p.add(f"{base}.autoscale.provisionDelay", str(e))
        return None
    if delay < 0:
        p.add(f"{base}.autoscale.provisionDelay", "must be >= 0")
    shape = SimNode(name=g.name, allocatable=ResourceVector(), labels=dict(g.labels))
    return SimPool(name=g.name, node=shape, count=max(g.count, 0), max=a.max, provision_seconds=delay)


def _devices(p: Problems, base: str, devices: list[_Devices]) -> ResourceVector:
    """What a node's ResourceSlices would publish: ``deviceclass/<class>`` x count."""
    out: dict[str, int] = {}
    for j, d in enumerate(devices):
        if not d.device_class:
            p.add(f"{base}.devices[{j}].deviceClass", "required")
        if d.count < 0:
            p.add(f"{base}.devices[{j}].count", "must be >= 0")
        name = device_resource(d.device_class)
        out[name] = out.get(name, 0) + max(d.count, 0) * 1000
        for cap, qty in d.capacity.items():
            key = capacity_resource(d.device_class, cap)
            try:
                out[key] = out.get(key, 0) + max(d.count, 0) * to_units(key, qty)
            except QuantityError as exc:
                p.add(key_path(f"{base}.devices[{j}].capacity", cap), str(exc))
    return ResourceVector(out)


def parse_sim_cluster(doc: Mapping[str, Any]) -> SimCluster:
    """Expand node groups into nodes (``<group>-<index>``); raises ManifestError naming every bad field."""
    m = validate_model(SimClusterManifest, doc)
    p = Problems()
    check_name(p, "metadata.name", m.metadata.name, label=False)
    nodes: list[SimNode] = []
    pools: list[SimPool] = []
    groups: set[str] = set()
    for i, g in enumerate(m.spec.node_groups):
        if g.name and g.name in groups:
            p.add(f"spec.nodeGroups[{i}].name", f'duplicate node group "{g.name}"')
        groups.add(g.name)
        got = _group_nodes(p, f"spec.nodeGroups[{i}]", g)
        nodes.extend(got)
        pool = _group_pool(p, f"spec.nodeGroups[{i}]", g)
        if pool is not None:  # the shape as the group's nodes have it (GPUs and pods filled in)
            shape = _group_nodes(Problems(), "", g.model_copy(update={"count": 1}))[0]
            pools.append(replace(pool, node=shape))
    spec = m.spec
    discovery = spec.hyper_node_discovery
    if discovery is None and spec.network_topology_types is not None:
        discovery = {"networkTopologyTypes": spec.network_topology_types}
    p.raise_if_any()
    _check_discovery(discovery)
    return SimCluster(
        name=m.metadata.name,
        labels=dict(m.metadata.labels),
        nodes=tuple(nodes),
        pools=tuple(pools),
        hyper_nodes=tuple(copy.deepcopy(h) for h in spec.hyper_nodes),
        discovery=copy.deepcopy(discovery),
        raw=copy.deepcopy(dict(doc)),
    )


def _check_discovery(discovery: Mapping[str, Any] | None) -> None:
    """The discovery config's sources (unknown ones named); a simulated cluster has no UFM server."""
    plan = discovery_plan(discovery, where="spec.hyperNodeDiscovery")
    if plan.remote:
        raise ManifestError.one(
            "spec.hyperNodeDiscovery",
            "ufm discovery reads a UFM server: a simulated cluster takes label and roce",
        )


SIM_KINDS: dict[tuple[str, str], Callable[[Mapping[str, Any]], Manifest | SimCluster]] = {
    **KINDS,
    (API_VERSION, KIND): parse_sim_cluster,
}


SIM_SCHEMAS: dict[tuple[str, str], type[Model]] = {**SCHEMAS, (API_VERSION, KIND): SimClusterManifest}


def parse_sim_manifests(text: str) -> list[Manifest | SimCluster]:
    """Every document of a file the simulator or the sim backend reads; raises ManifestError."""
    return parse_documents(text, {**KINDS, **SIM_KINDS}, schemas={**SCHEMAS, **SIM_SCHEMAS})
