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
A MIG instance is named ``UUID[group-position]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vglobal.scheduler.devices import GpuDevice

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
