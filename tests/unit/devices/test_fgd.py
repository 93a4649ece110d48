"""Fragmentation of a node for the demand seen so far (the fgd policy's measure), by hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from vglobal.scheduler.devices.fgd import DemandModel, TaskType, cpu_stranded, fragmentation

SHARE_500 = TaskType(cpu=1000, memory=0, units=1, demand=500)
WHOLE_2 = TaskType(cpu=1000, memory=0, units=2, demand=1000)
BIG_CPU = TaskType(cpu=64_000, memory=0, units=1, demand=100)


def model(*kinds: tuple[TaskType, int]) -> DemandModel:
    m = DemandModel()
    n = 0
    for kind, count in kinds:
        for _ in range(count):
            m.observe(f"t{n}", kind)
            n += 1
    return m


@pytest.mark.parametrize(
    ("kinds", "free", "cpu", "expected"),
    [
        # one half-GPU type: a GPU with 300 free is stranded, 1000 and 600 are usable
        (((SHARE_500, 1),), [1000, 300, 600], 8000, 300.0),
        # a 2-GPU type: only fully free GPUs count; one full GPU is not enough, so all 1900 is stranded
        (((WHOLE_2, 1),), [1000, 300, 600], 8000, 1900.0),
        (((WHOLE_2, 1),), [1000, 1000, 600], 8000, 600.0),
        # weights are arrival counts: 3/4 x 300 + 1/4 x 1900
        (((SHARE_500, 3), (WHOLE_2, 1)), [1000, 300, 600], 8000, 0.75 * 300 + 0.25 * 1900),
        # the type does not fit the node's cpu: every free GPU-milli is stranded for it
        (((BIG_CPU, 1),), [1000, 300, 600], 8000, 1900.0),
        (((BIG_CPU, 1),), [1000, 300, 600], 64_000, 0.0),
    ],
)
def test_fragmentation_table(
    kinds: tuple[tuple[TaskType, int], ...], free: list[int], cpu: int, expected: float
) -> None:
    got = fragmentation(model(*kinds), np.array([free], dtype=np.int64), np.array([cpu]), np.array([1 << 40]))
    assert got.tolist() == pytest.approx([expected])


def test_a_repeated_task_counts_once_and_new_types_reweight() -> None:
    m = model((SHARE_500, 1))
    m.observe("t0", WHOLE_2)  # same uid again: ignored
    assert m.counts == {SHARE_500: 1}
    m.observe("x", WHOLE_2)
    m.kinds()
    assert m.weights.tolist() == [1.0, 1.0]


def test_empty_model_scores_nothing() -> None:
    out = fragmentation(DemandModel(), np.array([[1000, 0]]), np.array([1]), np.array([1]))
    assert out.tolist() == [0.0]


def test_cpu_stranded_counts_gpu_the_free_cpu_cannot_feed() -> None:
    # demand: 3 x (1000 cpu, 0.5 GPU) + 1 x (1000 cpu, 2 GPUs) = 4000 cpu per 3500 GPU-milli
    m = model((SHARE_500, 3), (WHOLE_2, 1))
    gpu_free = np.array([3500, 3500, 1000, 0], dtype=np.int64)
    cpu_free = np.array([4000, 2000, 8000, 0], dtype=np.int64)
    got = cpu_stranded(m, gpu_free, cpu_free)
    assert got.tolist() == pytest.approx([0.0, 1750.0, 0.0, 0.0])


def test_cpu_stranded_without_gpu_demand_is_zero() -> None:
    m = model((TaskType(cpu=1000, memory=0, units=0, demand=0), 2))
    got = cpu_stranded(m, np.array([1000], dtype=np.int64), np.array([0], dtype=np.int64))
    assert got.tolist() == [0.0]
