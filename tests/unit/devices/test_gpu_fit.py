"""The shared card rule (vglobal.model.gpu_fit), used by deviceshare and by the hub's admission.

Cases port Volcano's pkg/scheduler/api/devices/nvidia/vgpu tests (utils_test.go TestCheckGPUtype,
and the card checks of utils.go checkNodeGPUSharingPredicate that TestHAMICoreFactory_* exercise).
"""

from __future__ import annotations

import numpy as np
import pytest

from vglobal.model.gpu_fit import (
    FREE,
    HAMI,
    MIG,
    Cards,
    DeviceRequest,
    cards_fit,
    mig_node,
    modes_ok,
    request_of,
)
from vglobal.model.resources import ResourceVector


def _cards(*rows: tuple[int, int, int, int, int]) -> Cards:
    """(memory, used memory, used cores, used tasks, mode) per card, split 10."""
    a = np.array(rows, dtype=np.int64).reshape(len(rows), 5)
    return Cards(
        present=np.ones(len(rows), dtype=np.bool_),
        memory=a[:, 0],
        split=np.full(len(rows), 10, dtype=np.int64),
        used_num=a[:, 3],
        used_mem=a[:, 1],
        used_cores=a[:, 2],
        mode=a[:, 4],
    )


def _fit(req: DeviceRequest, cards: Cards) -> list[bool]:
    return [bool(v) for v in cards_fit(req, cards, np.ones(cards.present.shape, dtype=np.bool_))]


def test_memory_per_card_not_total() -> None:
    # checkNodeGPUSharingPredicate: "card insufficient memory" per device, whatever the node total
    cards = _cards((16000, 8000, 0, 1, HAMI), (16000, 8000, 0, 1, HAMI))
    assert _fit(DeviceRequest(number=1, memory_mib=10000), cards) == [False, False]
    assert _fit(DeviceRequest(number=1, memory_mib=8000), cards) == [True, True]


def test_cores_over_100_refused() -> None:
    # "card insufficient core": UsedCore + Coresreq > 100
    cards = _cards((16000, 1000, 75, 1, HAMI), (16000, 1000, 50, 1, HAMI))
    assert _fit(DeviceRequest(number=1, memory_mib=1000, cores=50), cards) == [False, True]


def test_exclusive_core_request_needs_an_unshared_card() -> None:
    # "the container wants exclusive access to an entire card": Coresreq == 100 and UsedNum > 0
    cards = _cards((16000, 1000, 0, 1, HAMI), (16000, 0, 0, 0, FREE))
    assert _fit(DeviceRequest(number=1, memory_mib=1000, cores=100), cards) == [False, True]


def test_card_with_all_cores_used_takes_no_zero_core_task() -> None:
    # "the card is exclusively used": UsedCore == 100 and Coresreq == 0
    cards = _cards((16000, 1000, 100, 1, HAMI))
    assert _fit(DeviceRequest(number=1, memory_mib=1000), cards) == [False]


def test_split_count_bounds_tasks_per_card() -> None:
    # "card has too many tasks": UsedNum >= split count
    cards = _cards((16000, 1000, 0, 10, HAMI), (16000, 1000, 0, 9, HAMI))
    assert _fit(DeviceRequest(number=1, memory_mib=100), cards) == [False, True]


def test_whole_gpu_needs_an_idle_card() -> None:
    cards = _cards((40000, 5000, 0, 1, MIG), (40000, 0, 0, 0, FREE))
    assert _fit(DeviceRequest(whole=1), cards) == [False, True]


def test_node_mode_is_its_last_cards() -> None:
    """decodeNodeDevices overwrites the node's sharing mode with each registered card's: the last
    card's mode is the node's (the device plugin registers one mode per node)."""
    present = np.array([[True, True, False], [True, True, True], [False, False, False]])
    capable = np.array([[False, True, True], [True, True, False], [True, True, True]])
    assert mig_node(present, capable).tolist() == [True, False, False]


@pytest.mark.parametrize(
    ("annotation", "on_mig", "on_hami"),
    [
        (None, True, True),  # "if the pod does not specify the sharing mode, any device mode will be fitted"
        ("mig", True, False),
        ("hami-core", False, True),
        ("", False, False),  # an annotation present but empty differs from both modes
        ("mps", False, False),
    ],
)
def test_pod_vgpu_mode_against_the_node_mode(annotation: str | None, on_mig: bool, on_hami: bool) -> None:
    """checkNodeGPUSharingPredicateAndScore: "pod required sharing mode %s is not the same as the
    node mode %s" when the pod names a mode; any node when it names none."""
    ann = {} if annotation is None else {"volcano.sh/vgpu-mode": annotation}
    req = request_of(ResourceVector.from_quantities({"volcano.sh/vgpu-number": 1}), ann)
    assert (req.mode_ok(True), req.mode_ok(False)) == (on_mig, on_hami)
    assert modes_ok(req, np.array([True, False])).tolist() == [on_mig, on_hami]


def test_memory_by_percentage_and_whole_card_by_default() -> None:
    cards = _cards((16000, 4000, 0, 1, HAMI))
    assert _fit(DeviceRequest(number=1, memory_percent=75), cards) == [True]
    assert _fit(DeviceRequest(number=1, memory_percent=76), cards) == [False]
    assert _fit(DeviceRequest(number=1), cards) == [False]  # no memory named: the whole card


@pytest.mark.parametrize(
    ("case", "annotations", "model", "ok"),
    [
        ("Single GPUInUse value matches", {"nvidia.com/use-gputype": "A100"}, "NVIDIA-A100", True),
        ("GPUInUse mixed case matches", {"nvidia.com/use-gputype": "a100"}, "NVIDIA-A100", True),
        ("Multiple GPUInUse values, one matches", {"nvidia.com/use-gputype": "V100,A100"}, "A100", True),
        ("Multiple GPUInUse values, none matches", {"nvidia.com/use-gputype": "V100,T4"}, "A100", False),
        ("Single GPUNoUse value matches", {"nvidia.com/nouse-gputype": "A100"}, "NVIDIA-A100", False),
        ("GPUNoUse mixed case matches", {"nvidia.com/nouse-gputype": "a100"}, "NVIDIA-A100", False),
        ("Multiple GPUNoUse values, one matches", {"nvidia.com/nouse-gputype": "V100,A100"}, "A100", False),
        ("Multiple GPUNoUse values, none matches", {"nvidia.com/nouse-gputype": "V100,T4"}, "A100", True),
        ("Empty annotations map", {}, "A100", True),
        # checkGPUtype returns on the use list: a nouse list beside it is never read
        (
            "use and nouse: the use list decides",
            {"nvidia.com/use-gputype": "A100", "nvidia.com/nouse-gputype": "A100"},
            "A100",
            True,
        ),
    ],
)
def test_check_gpu_type(case: str, annotations: dict[str, str], model: str, ok: bool) -> None:
    """utils_test.go TestCheckGPUtype."""
    req = request_of(ResourceVector({"volcano.sh/vgpu-number": 1000}), annotations)
    assert req.model_ok(model) is ok, case


def test_request_without_number_is_one_vgpu() -> None:
    req = request_of(ResourceVector({"volcano.sh/vgpu-memory": 2048_000}), {})
    assert (req.number, req.memory_mib, req.units) == (1, 2048, 1)
