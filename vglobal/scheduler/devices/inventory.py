"""Per-GPU inventory of a node and what a task asks of it (Volcano's vGPU resource names).

A node's GPUs come from ``NodeSpec.extensions["gpus"]`` (the sim's ``gpus: {count, memoryMiB,
model, mig}``, the kube backend's device list) or, failing that, from its ``volcano.sh/vgpu-*``
capacity as the vGPU device plugin registers it (number = GPUs x split count). Amounts of scalar
resources are milli-units in a ResourceVector, so ``volcano.sh/vgpu-memory: 4096`` is 4096000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import NodeSpec, TaskSpec

GPUS_EXTENSION = "gpus"
NVIDIA_GPU = "nvidia.com/gpu"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
MODE_ANNOTATION = "volcano.sh/vgpu-mode"  # hami-core | mig
USE_TYPE_ANNOTATION = "nvidia.com/use-gputype"  # allowed models, comma or | separated
NOUSE_TYPE_ANNOTATION = "nvidia.com/nouse-gputype"
DEFAULT_SPLIT = 10  # the vGPU device plugin's default deviceSplitCount
MILLI = 1000


@dataclass(frozen=True, slots=True)
class GpuDevice:
    index: int
    memory_mib: int
    model: str = ""
    mig: bool = False
    split: int = DEFAULT_SPLIT  # how many vGPU tasks may share it


def gpus_from_spec(count: int, memory_mib: int, model: str = "", mig: bool = False) -> tuple[GpuDevice, ...]:
    return tuple(GpuDevice(i, memory_mib, model, mig) for i in range(count))


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


def _types(raw: str | None) -> frozenset[str]:
    if not raw:
        return frozenset()
    return frozenset(t.strip() for t in raw.replace("|", ",").split(",") if t.strip())


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    whole: int = 0  # nvidia.com/gpu: whole GPUs
    number: int = 0  # vGPUs (one per device)
    memory_mib: int = 0  # per vGPU; 0 = by percentage, or the whole card
    memory_percent: int = 0
    cores: int = 0  # per vGPU, percent of one GPU's compute
    mode: str = "hami-core"  # or mig
    use_types: frozenset[str] = frozenset()
    nouse_types: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return self.whole == 0 and self.number == 0

    def model_ok(self, model: str) -> bool:
        """HAMi's type filter: a listed substring of the model name allows (or forbids) the GPU."""
        if self.use_types and not any(t.lower() in model.lower() for t in self.use_types):
            return False
        return not any(t.lower() in model.lower() for t in self.nouse_types)


def device_request(task: TaskSpec) -> DeviceRequest:
    req: ResourceVector = task.request
    whole = -(-req[NVIDIA_GPU] // MILLI)
    number = req[VGPU_NUMBER] // MILLI
    memory = req[VGPU_MEMORY] // MILLI
    percent = req[VGPU_MEMORY_PERCENTAGE] // MILLI
    if number == 0 and (memory or percent or req[VGPU_CORES]):
        number = 1  # Volcano: a vGPU request without a number is one vGPU
    ann: Mapping[str, str] = task.annotations
    return DeviceRequest(
        whole=whole,
        number=number,
        memory_mib=memory,
        memory_percent=percent,
        cores=req[VGPU_CORES] // MILLI,
        mode=ann.get(MODE_ANNOTATION, "hami-core") or "hami-core",
        use_types=_types(ann.get(USE_TYPE_ANNOTATION)),
        nouse_types=_types(ann.get(NOUSE_TYPE_ANNOTATION)),
    )
