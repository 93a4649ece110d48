"""Whether a GPU card can take one vGPU or whole GPU of a request: the one device rule that both the
local scheduler's deviceshare plugin and the hub's admission apply (pure, vectorised over cards).

Volcano's rules: a card fits a vGPU when ``UsedNum < split``, free memory >= the request,
``UsedCore + cores <= 100``, not (cores == 100 and the card is shared), not (the card's cores are
all used and cores == 0); a card serving MIG instances takes no hami-core vGPU. A whole
``nvidia.com/gpu`` takes a card nobody uses. Amounts of scalar resources are milli-units in a
ResourceVector, so ``volcano.sh/vgpu-memory: 4096`` is 4096000.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vglobal.model.resources import ResourceVector

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

NVIDIA_GPU = "nvidia.com/gpu"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
VGPU_RESOURCES = (VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES, VGPU_MEMORY_PERCENTAGE)
MODE_ANNOTATION = "volcano.sh/vgpu-mode"  # hami-core | mig
USE_TYPE_ANNOTATION = "nvidia.com/use-gputype"  # allowed models, comma or | separated
NOUSE_TYPE_ANNOTATION = "nvidia.com/nouse-gputype"
GPU_HINTS = (MODE_ANNOTATION, USE_TYPE_ANNOTATION, NOUSE_TYPE_ANNOTATION)  # what the card fit reads
MILLI = 1000
FREE, HAMI, MIG = 0, 1, 2  # what a card is used for


def _types(raw: str | None) -> frozenset[str]:
    if not raw:
        return frozenset()
    return frozenset(t.strip() for t in raw.replace("|", ",").split(",") if t.strip())


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    whole: int = 0  # nvidia.com/gpu: whole GPUs
    number: int = 0  # vGPUs (one per card)
    memory_mib: int = 0  # per vGPU; 0 = by percentage, or the whole card
    memory_percent: int = 0
    cores: int = 0  # per vGPU, percent of one GPU's compute
    mode: str = "hami-core"  # or mig
    use_types: frozenset[str] = frozenset()
    nouse_types: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return self.whole == 0 and self.number == 0

    @property
    def units(self) -> int:
        """Cards one pod takes."""
        return self.whole or self.number

    def model_ok(self, model: str) -> bool:
        """HAMi's type filter: a listed substring of the model name allows (or forbids) the GPU.
        Volcano's checkGPUtype reads the use list when a pod has one and the nouse list only then."""
        name = model.lower()
        if self.use_types:
            return any(t.lower() in name for t in self.use_types)
        return not any(t.lower() in name for t in self.nouse_types)


def request_of(req: ResourceVector, annotations: Mapping[str, str]) -> DeviceRequest:
    """What one pod asks of its node's cards, from its resources and the GPU annotations."""
    whole = -(-req[NVIDIA_GPU] // MILLI)
    number = req[VGPU_NUMBER] // MILLI
    memory = req[VGPU_MEMORY] // MILLI
    percent = req[VGPU_MEMORY_PERCENTAGE] // MILLI
    if number == 0 and (memory or percent or req[VGPU_CORES]):
        number = 1  # Volcano: a vGPU request without a number is one vGPU
    return DeviceRequest(
        whole=whole,
        number=number,
        memory_mib=memory,
        memory_percent=percent,
        cores=req[VGPU_CORES] // MILLI,
        mode=annotations.get(MODE_ANNOTATION, "hami-core") or "hami-core",
        use_types=_types(annotations.get(USE_TYPE_ANNOTATION)),
        nouse_types=_types(annotations.get(NOUSE_TYPE_ANNOTATION)),
    )


def gpu_hints(annotations: Mapping[str, str]) -> dict[str, str]:
    """The pod annotations the card fit reads (GPU mode and model filters), of a task's template."""
    return {k: str(annotations[k]) for k in GPU_HINTS if k in annotations}


def asks_cards(req: ResourceVector) -> bool:
    """A pod's request takes GPU cards (vGPUs, MIG instances or whole GPUs)."""
    return asks_vgpu(req) or req[NVIDIA_GPU] > 0


def asks_vgpu(req: ResourceVector) -> bool:
    """A pod's request names a vGPU resource (a pod without one needs no card-level check)."""
    return any(req[r] for r in VGPU_RESOURCES)


def memory_needed(req: DeviceRequest, memory: IntArray) -> IntArray:
    """Per card of total ``memory``, what one vGPU of ``req`` takes (the whole card if not given)."""
    if req.memory_mib:
        return np.full(memory.shape, req.memory_mib, dtype=np.int64)
    if req.memory_percent:
        out: IntArray = memory * req.memory_percent // 100
        return out
    return memory


@dataclass(frozen=True, slots=True)
class Cards:
    """Cards and their use, one array entry per card (any shape, all arrays alike)."""

    present: BoolArray
    memory: IntArray  # total MiB
    split: IntArray  # how many vGPU tasks may share the card
    used_num: IntArray
    used_mem: IntArray
    used_cores: IntArray
    mode: IntArray  # FREE | HAMI | MIG


def cards_fit(req: DeviceRequest, cards: Cards, model_ok: BoolArray) -> BoolArray:
    """Which cards could take one unit of a hami-core vGPU or whole-GPU request (MIG: mig_fit)."""
    ok: BoolArray = cards.present & model_ok
    if req.whole:
        ok &= cards.used_num == 0
        return ok
    ok &= cards.mode != MIG
    ok &= vgpu_checks(req, cards)
    return ok


def vgpu_checks(req: DeviceRequest, cards: Cards) -> BoolArray:
    """Volcano's checks of every card before its sharing mode (hami-core or MIG) is asked:
    a free share slot, the memory, the cores, exclusive and full cards."""
    used_num, used_cores = cards.used_num, cards.used_cores
    ok: BoolArray = used_num < cards.split
    ok &= cards.memory - cards.used_mem >= memory_needed(req, cards.memory)
    ok &= used_cores + req.cores <= 100
    if req.cores >= 100:
        ok &= used_num == 0
    if req.cores == 0:
        ok &= used_cores < 100
    return ok


def free_milli(cards: Cards) -> IntArray:
    """Per card, its free share in milli (the smaller of compute and memory); 0 for no card."""
    cores = (100 - cards.used_cores) * 10
    mem = cards.memory
    by_mem = np.where(mem > 0, (mem - cards.used_mem) * 1000 // np.maximum(mem, 1), 1000)
    out: IntArray = np.where(cards.present, np.minimum(cores, by_mem), 0)
    return out


def card_order(cards: Cards, policy: str) -> FloatArray:
    """The order deviceshare gives a pod its cards in, smaller first (cards on the last axis).
    Volcano: binpack = most used memory, spread = fewest tasks, else the highest index first;
    ours: fgd / bestfit take the card left with the least free capacity (best fit)."""
    idx = np.broadcast_to(np.arange(cards.present.shape[-1], dtype=np.float64), cards.present.shape)
    if policy == "binpack":
        out: FloatArray = -cards.used_mem * 1e3 + idx
    elif policy == "spread":
        out = cards.used_num * 1e3 + idx
    elif policy in ("fgd", "bestfit"):
        out = free_milli(cards) * 1e3 + idx
    else:
        out = -idx
    return out
