"""Per-GPU inventory of a node and what a task asks of it (Volcano's vGPU resource names).

A node's GPUs come from ``NodeSpec.extensions["gpus"]`` (the sim's ``gpus: {count, memoryMiB,
model, mig}``, the kube backend's device list) or, failing that, from its ``volcano.sh/vgpu-*``
capacity as the vGPU device plugin registers it (number = GPUs x split count). Amounts of scalar
resources are milli-units in a ResourceVector, so ``volcano.sh/vgpu-memory: 4096`` is 4096000.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vglobal.model.gpu_fit import (
    MILLI,
    NVIDIA_GPU,
    VGPU_CORES,
    VGPU_MEMORY,
    VGPU_NUMBER,
    DeviceRequest,
    request_of,
)
from vglobal.scheduler.api import NodeSpec, TaskSpec

GPUS_EXTENSION = "gpus"
DEFAULT_SPLIT = 10  # the vGPU device plugin's default deviceSplitCount


@dataclass(frozen=True, slots=True)
class GpuDevice:
    index: int
    memory_mib: int
    model: str = ""
    mig: bool = False
    split: int = DEFAULT_SPLIT  # how many vGPU tasks may share it
    uuid: str = ""  # what volcano.sh/vgpu-use-gpuuuid names ("" unknown: no UUID list allows it)


def gpus_from_spec(
    count: int, memory_mib: int, model: str = "", mig: bool = False, node: str = ""
) -> tuple[GpuDevice, ...]:
    """``count`` alike GPUs; with ``node`` (a simulated node) each gets the UUID ``GPU-<node>-<i>``."""
    return tuple(
        GpuDevice(i, memory_mib, model, mig, uuid=f"GPU-{node}-{i}" if node else "") for i in range(count)
    )


def vgpu_capacity(devices: Sequence[GpuDevice]) -> dict[str, int]:
    """The ``volcano.sh/vgpu-*`` allocatable the device plugin would register for these GPUs."""
    return {
        VGPU_NUMBER: sum(d.split for d in devices) * MILLI,
        VGPU_MEMORY: sum(d.memory_mib for d in devices) * MILLI,
        VGPU_CORES: 100 * len(devices) * MILLI,
    }


def node_gpus(node: NodeSpec) -> tuple[GpuDevice, ...]:
    given = node.extensions.get(GPUS_EXTENSION)
    if given:
        return tuple(given)
    alloc = node.allocatable
    number = alloc[VGPU_NUMBER] // MILLI
    whole = alloc[NVIDIA_GPU] // MILLI
    if number <= 0:
        # plain nvidia.com/gpu nodes: whole GPUs of unknown memory
        return tuple(GpuDevice(i, 0) for i in range(whole))
    count = whole if whole > 0 else max(1, number // DEFAULT_SPLIT)
    memory = alloc[VGPU_MEMORY] // MILLI // count
    return tuple(GpuDevice(i, memory, split=max(1, number // count)) for i in range(count))


def device_request(task: TaskSpec) -> DeviceRequest:
    return request_of(task.request, task.annotations)
