"""The Volcano vGPU device plugin's wire formats (Project-HAMi/volcano-vgpu-device-plugin and
Volcano's ``pkg/scheduler/api/devices/nvidia/vgpu``), so the real device plugin understands us.

Node registration, annotation ``volcano.sh/node-vgpu-register``: one entry per GPU, each
``UUID,splitCount,memoryMiB,type,healthy,mode`` followed by ``:`` (type is ``NVIDIA-<model>``,
mode ``hami-core`` or ``mig``). Volcano only uses it on nodes whose allocatable has non-zero
``volcano.sh/vgpu-number``, ``-cores`` and ``-memory``.

Bind time: the scheduler puts the devices it chose into the Binding's annotations (the API
server merges them into the pod with the node): ``volcano.sh/vgpu-ids-new`` and
``volcano.sh/devices-to-allocate`` hold, per requesting container (``;`` between containers),
``UUID,NVIDIA,usedMemMiB,usedCores:`` per device; plus ``volcano.sh/vgpu-node``,
``volcano.sh/vgpu-time`` and ``volcano.sh/bind-time`` (Unix seconds) and
``volcano.sh/bind-phase: allocating`` (the device plugin sets ``success`` once it allocated).
A MIG instance is named ``UUID[group-position]``. An agent that takes over a cluster reads the
devices of the pods it finds back from ``volcano.sh/vgpu-ids-new``, as Volcano's AddResource does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vglobal.model.mig_fit import MigInstance, instance_memory
from vglobal.scheduler.api import Grant
from vglobal.scheduler.devices import GpuDevice
from vglobal.scheduler.devices.mig import MigConfig

REGISTER_ANNOTATION = "volcano.sh/node-vgpu-register"
IDS_ANNOTATION = "volcano.sh/vgpu-ids-new"
TO_ALLOCATE_ANNOTATION = "volcano.sh/devices-to-allocate"
NODE_ANNOTATION = "volcano.sh/vgpu-node"
TIME_ANNOTATION = "volcano.sh/vgpu-time"
BIND_TIME_ANNOTATION = "volcano.sh/bind-time"
BIND_PHASE_ANNOTATION = "volcano.sh/bind-phase"
VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES = (
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/vgpu-cores",
)
NVIDIA = "NVIDIA"
MIG_MODE = "mig"
MIG_GROUP = "group"  # a MIG id's group: this prefix and the geometry's index


@dataclass(frozen=True, slots=True)
class RegisteredGpu:
    uuid: str
    split: int
    memory_mib: int
    type: str
    healthy: bool
    mode: str


def decode_register(raw: str) -> list[RegisteredGpu]:
    """The entries of a node's registration; malformed entries are skipped (as Volcano logs them)."""
    out = []
    for entry in raw.split(":"):
        items = entry.split(",")
        if len(items) < 6:
            continue
        try:
            split, memory = int(items[1]), int(items[2])
        except ValueError:
            continue
        out.append(RegisteredGpu(items[0], split, memory, items[3], items[4].lower() == "true", items[5]))
    return out


def registered_devices(
    annotations: Mapping[str, str], allocatable: Mapping[str, int]
) -> tuple[tuple[GpuDevice, ...], tuple[str, ...]]:
    """(devices, their UUIDs by device index) of a node the vGPU device plugin registered;
    empty when it did not, or when Volcano would ignore the registration. Unhealthy GPUs are left
    out, as nothing may be placed on them."""
    raw = annotations.get(REGISTER_ANNOTATION)
    if not raw or not all(allocatable.get(r, 0) > 0 for r in (VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES)):
        return (), ()
    healthy = [g for g in decode_register(raw) if g.healthy]
    devices = tuple(
        GpuDevice(i, g.memory_mib, g.type, g.mode == MIG_MODE, split=max(1, g.split), uuid=g.uuid)
        for i, g in enumerate(healthy)
    )
    return devices, tuple(g.uuid for g in healthy)


def _vgpu_containers(pod: Mapping[str, Any]) -> list[int]:
    """How many vGPUs each requesting container asks for, in container order (Volcano's
    ``ExtractResourceRequest``: the number, or one device when only memory is limited)."""
    counts = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        limits = ((c.get("resources") or {}).get("limits")) or {}
        if VGPU_NUMBER in limits:
            counts.append(int(str(limits[VGPU_NUMBER])))
        elif VGPU_MEMORY in limits:
            counts.append(1)
    return counts


@dataclass(frozen=True, slots=True)
class DeviceUse:
    """One device given to a pod: its index on the node, memory and cores taken, MIG slot."""

    index: int
    memory_mib: int
    cores: int
    mig_slot: str | None = None  # "group-position" of a MIG instance


def bind_annotations(
    pod: Mapping[str, Any], node: str, uuids: Sequence[str], uses: Sequence[DeviceUse], now: float
) -> dict[str, str]:
    """The annotations Volcano's deviceshare writes into the Binding of a vGPU pod ({} if none)."""
    if not uses or not uuids:
        return {}
    per_container = _vgpu_containers(pod) or [len(uses)]
    remaining = list(uses)
    parts = []
    for count in per_container:
        taken, remaining = remaining[:count], remaining[count:]
        parts.append(
            "".join(
                f"{_device_id(uuids, u)},{NVIDIA},{u.memory_mib},{u.cores}:"
                for u in taken
                if u.index < len(uuids)
            )
        )
    ids = ";".join(parts)
    stamp = str(int(now))
    return {
        NODE_ANNOTATION: node,
        TIME_ANNOTATION: stamp,
        IDS_ANNOTATION: ids,
        TO_ALLOCATE_ANNOTATION: ids,
        BIND_PHASE_ANNOTATION: "allocating",
        BIND_TIME_ANNOTATION: stamp,
    }


def _device_id(uuids: Sequence[str], use: DeviceUse) -> str:
    uuid = uuids[use.index]
    return f"{uuid}[{use.mig_slot}]" if use.mig_slot else uuid


@dataclass(frozen=True, slots=True)
class UsedDevice:
    """One device of a pod's ``volcano.sh/vgpu-ids-new``."""

    uuid: str
    mig_slot: str | None  # "group-position" of a MIG instance
    memory_mib: int
    cores: int


def decode_devices(raw: str) -> list[UsedDevice]:
    """Volcano's DecodePodDevices, containers flattened: entries with fewer than 4 fields or a
    usage that is not a non-negative number are skipped."""
    out = []
    for container in raw.split(";"):
        for entry in container.split(":"):
            items = entry.split(",")
            if len(items) < 4:
                continue
            try:
                memory, cores = int(items[2]), int(items[3])
            except ValueError:
                continue
            if memory < 0 or cores < 0:
                continue
            uuid, slot = items[0], None
            if uuid.endswith("]") and "[" in uuid:
                uuid, slot = uuid[:-1].split("[", 1)
            out.append(UsedDevice(uuid, slot, memory, cores))
    return out


def grants_of(
    raw: str, uuids: Sequence[str], devices: Sequence[GpuDevice], mig: MigConfig
) -> tuple[Grant, ...]:
    """The devices a pod holds, from its ``volcano.sh/vgpu-ids-new``: those of GPUs the node
    registers (a UUID it does not is left out, as AddResource leaves it), a MIG instance found by
    its geometry and position."""
    index = {u: i for i, u in enumerate(uuids)}
    out = []
    for used in decode_devices(raw):
        i = index.get(used.uuid)
        if i is None or i >= len(devices):
            continue
        if used.mig_slot is None:
            out.append(Grant(i, used.memory_mib, used.cores))
            continue
        found = _mig_instance(used.mig_slot, devices[i], mig)
        if found is None:
            continue
        geometry, position, inst = found
        memory = instance_memory(inst, mig.memory_factor)
        out.append(Grant(i, memory, used.cores, geometry=geometry, instance=inst, position=position))
    return tuple(out)


def _mig_instance(slot: str, gpu: GpuDevice, mig: MigConfig) -> tuple[int, int, MigInstance] | None:
    """(geometry, position, instance) a MIG slot "group<g>-<position>" names (findPosition)."""
    group, _, position = slot.rpartition("-")
    if not group.startswith(MIG_GROUP) or not group[len(MIG_GROUP) :].isdigit() or not position.isdigit():
        return None
    geometry, at = int(group[len(MIG_GROUP) :]), int(position)
    geometries = mig.geometries(gpu.model, gpu.memory_mib)
    if geometry >= len(geometries):
        return None
    start = 0
    for inst in geometries[geometry]:
        if at < start + inst.count:
            return geometry, at, inst
        start += inst.count
    return None
