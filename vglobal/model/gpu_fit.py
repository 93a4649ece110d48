"""Whether a GPU card can take one vGPU or whole GPU of a request: the one device rule that both the
local scheduler's deviceshare plugin and the hub's admission apply (pure, vectorised over cards).

Volcano's rules: a node has one GPU sharing mode, its last card's as the device plugin registers
them (``hami-core``, or ``mig``: all its vGPUs are MIG instances); a pod naming a
``volcano.sh/vgpu-mode`` fits only a node of that mode, a pod naming none takes the node's mode. A
card fits a vGPU when the pod's GPU UUID lists allow it, ``UsedNum < split``, free memory >= the
request, ``UsedCore + cores <= 100``, not (cores == 100 and the card is shared), not (the card's
cores are all used and cores == 0), its model passes the type lists and, for a pod with
``volcano.sh/vgpu-podgroup-policy: spread``, no other pod of its PodGroup uses it. A whole
``nvidia.com/gpu`` takes a card nobody uses. Amounts of scalar resources are milli-units in a
ResourceVector, so ``volcano.sh/vgpu-memory: 4096`` is 4096000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

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
USE_UUID_ANNOTATION = "volcano.sh/vgpu-use-gpuuuid"  # allowed GPU UUIDs, comma separated
NOUSE_UUID_ANNOTATION = "volcano.sh/vgpu-nouse-gpuuuid"
PODGROUP_POLICY_ANNOTATION = "volcano.sh/vgpu-podgroup-policy"  # spread: one pod of a group per card
GPU_HINTS = (  # what the card fit reads
    MODE_ANNOTATION,
    USE_TYPE_ANNOTATION,
    NOUSE_TYPE_ANNOTATION,
    USE_UUID_ANNOTATION,
    NOUSE_UUID_ANNOTATION,
    PODGROUP_POLICY_ANNOTATION,
)
HAMI_MODE, MIG_MODE = "hami-core", "mig"  # a node's GPU sharing mode
MILLI = 1000
FREE, HAMI, MIG = 0, 1, 2  # what a card is used for


def _types(raw: str | None) -> frozenset[str]:
    if not raw:
        return frozenset()
    return frozenset(t.strip() for t in raw.replace("|", ",").split(",") if t.strip())


def _uuids(raw: str | None) -> frozenset[str]:
    """Volcano's parseGPUUUIDList: comma separated, blanks trimmed, empty entries dropped."""
    return frozenset(u.strip() for u in (raw or "").split(",") if u.strip())


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    whole: int = 0  # nvidia.com/gpu: whole GPUs
    number: int = 0  # vGPUs (one per card)
    memory_mib: int = 0  # per vGPU; 0 = by percentage, or the whole card
    memory_percent: int = 0
    cores: int = 0  # per vGPU, percent of one GPU's compute
    mode: str | None = None  # the vgpu-mode the pod names (None: the node's)
    use_types: frozenset[str] = frozenset()
    nouse_types: frozenset[str] = frozenset()
    use_uuids: frozenset[str] = frozenset()
    nouse_uuids: frozenset[str] = frozenset()
    spread: bool = False  # vgpu-podgroup-policy spread: no card shared with its PodGroup's pods

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

    @property
    def filtered(self) -> bool:
        """Some list of the pod narrows the cards it may use (gpu_fit.cards_allowed)."""
        return bool(self.use_types or self.nouse_types or self.uuid_filter or self.spread)

    @property
    def uuid_filter(self) -> bool:
        return bool(self.use_uuids or self.nouse_uuids)

    def uuid_ok(self, uuid: str) -> bool:
        """Volcano's gpuUUIDFilter: exact UUIDs; the deny list wins; with either list a card of
        unknown UUID is refused."""
        if not uuid:
            return not self.uuid_filter
        if self.use_uuids and uuid not in self.use_uuids:
            return False
        return uuid not in self.nouse_uuids

    def mode_ok(self, mig_node: bool) -> bool:
        """A pod naming a vgpu-mode fits only a node of that mode (checkNodeGPUSharingPredicate)."""
        return self.mode is None or bool(modes_ok(self, np.array(mig_node)))


def modes_ok(req: DeviceRequest, mig_node: BoolArray) -> BoolArray:
    """Per node, whether a pod's vgpu-mode lets it use the node (any mode when it names none; an
    empty or unknown mode, none: Volcano compares the annotation to the node's mode as written)."""
    if req.mode is None:
        return np.ones(mig_node.shape, dtype=np.bool_)
    out: BoolArray = mig_node if req.mode == MIG_MODE else ~mig_node
    if req.mode not in (MIG_MODE, HAMI_MODE):
        out = np.zeros(mig_node.shape, dtype=np.bool_)
    return out


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
        mode=annotations.get(MODE_ANNOTATION),
        use_types=_types(annotations.get(USE_TYPE_ANNOTATION)),
        nouse_types=_types(annotations.get(NOUSE_TYPE_ANNOTATION)),
        use_uuids=_uuids(annotations.get(USE_UUID_ANNOTATION)),
        nouse_uuids=_uuids(annotations.get(NOUSE_UUID_ANNOTATION)),
        spread=annotations.get(PODGROUP_POLICY_ANNOTATION) == "spread",
    )


def gpu_hints(annotations: Mapping[str, str]) -> dict[str, str]:
    """The pod annotations the card fit reads (GPU mode, model and UUID filters, podgroup policy),
    of a task's template."""
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


def mig_node(present: BoolArray, mig_capable: BoolArray) -> BoolArray:
    """Per node (cards on the last axis), whether it is in MIG mode: Volcano's decodeNodeDevices
    keeps the mode of the last card the device plugin registered."""
    last = np.where(present.any(axis=-1), present.shape[-1] - 1 - np.argmax(present[..., ::-1], axis=-1), 0)
    out: BoolArray = np.take_along_axis(mig_capable, np.expand_dims(last, -1), axis=-1)[..., 0]
    return out & present.any(axis=-1)


class CardUseLike(Protocol):
    """A card granted to a pod (the agent's Grant, the hub's CardUse)."""

    @property
    def memory_mib(self) -> int: ...
    @property
    def cores(self) -> int: ...
    @property
    def whole(self) -> bool: ...


def holds_card(use: CardUseLike) -> bool:
    """A grant that counts its pod among the card's users for the spread policy: a vGPU using some
    memory or cores (Volcano's deviceHasPodFromSameGroup; whole GPUs are not vGPU pods)."""
    return not use.whole and (use.memory_mib > 0 or use.cores > 0)


def count_holder(holders: dict[str, int], group: str, sign: int) -> None:
    """One pod of ``group`` starts (+1) or stops (-1) using a card."""
    left = holders.get(group, 0) + sign
    if left > 0:
        holders[group] = left
    else:
        holders.pop(group, None)


def cards_allowed(
    req: DeviceRequest,
    models: Sequence[str],
    uuids: Sequence[str],
    holders: Sequence[Mapping[str, int]],
    group: str,
) -> BoolArray:
    """Per card, whether the pod's lists let it look at the card: its model (use/nouse-gputype),
    for a vGPU its UUID (vgpu-use/nouse-gpuuuid), and with the podgroup policy spread no pod of
    its group (``group``) already using it (``holders``: per card, pods using it per group)."""
    ok = np.ones(len(models), dtype=np.bool_)
    if req.use_types or req.nouse_types:
        ok &= np.array([req.model_ok(m) for m in models], dtype=np.bool_)
    if not req.whole and req.uuid_filter:
        ok &= np.array([req.uuid_ok(u) for u in uuids], dtype=np.bool_)
    if not req.whole and req.spread and group:
        ok &= np.array([not h.get(group) for h in holders], dtype=np.bool_)
    return ok


def cards_fit(req: DeviceRequest, cards: Cards, model_ok: BoolArray) -> BoolArray:
    """Which cards could take one unit of a hami-core vGPU or whole-GPU request (MIG: mig_fit).
    ``model_ok``: the cards the pod's model and UUID lists allow."""
    ok: BoolArray = cards.present & model_ok
    if req.whole:
        ok &= cards.used_num == 0
        return ok
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
