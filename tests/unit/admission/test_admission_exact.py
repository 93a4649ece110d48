"""Quantities are exact integers on every admission path: a victim that frees just what a preemptor
of the same shape needs is enough at any size (float rounding once made a 256Gi need one byte more,
so one such victim was never enough and two were both taken)."""

from __future__ import annotations

import pytest

from tests.unit.admission.builders import job
from vglobal.admission import (
    Admit,
    ClusterSnap,
    NodeSnap,
    QueueSnap,
    RunningJob,
    RunningPod,
    Snapshot,
    admit,
)
from vglobal.model.resources import ResourceVector

GI = 2**30
SIZES = [16 * GI, 256 * GI, 1024 * GI]


def _mem(n: int) -> ResourceVector:
    return ResourceVector({"cpu": 1000, "memory": n})


def _running(uid: str, mem: int, node: str, priority: int) -> RunningJob:
    req = _mem(mem)
    return RunningJob(
        uid=uid,
        queue="q",
        cluster="c",
        priority=priority,
        created=0.0,
        request=req,
        placements={node: req},
        running_since=0.0,
        pods=(RunningPod(f"{uid}-0", node, req),),
        min_available=1,
    )


def _snapshot(mem: int, victims: int, *, cap: int | None = None, node_mem: int | None = None) -> Snapshot:
    """`victims` running jobs of `mem` bytes each (priorities 1, 2, ...) in a queue capped at what
    they hold, and a preemptor of the same shape."""
    running = tuple(_running(f"v{k}", mem, f"n{k}", k + 1) for k in range(victims))
    node = _mem(node_mem if node_mem is not None else 2 * mem).scale(2)
    nodes = tuple(
        NodeSnap(f"n{k}", node - (_mem(mem) if k < victims else ResourceVector()), node)
        for k in range(victims + 1)
    )
    held = _mem(mem).scale(victims)
    capability = ResourceVector({"memory": cap if cap is not None else victims * mem})
    return Snapshot(
        now=100.0,
        queues=(QueueSnap("q", capability=capability, allocated=held),),
        clusters=(ClusterSnap("c", {}, nodes),),
        pending=(job("p", "q", _mem(mem), priority=100, created=10),),
        running=running,
    )


@pytest.mark.parametrize("mem", SIZES, ids=["16Gi", "256Gi", "1Ti"])
def test_one_victim_of_the_same_shape_is_enough(mem: int) -> None:
    result = admit(_snapshot(mem, 1))
    assert isinstance(result.decisions["p"], Admit), result.decisions["p"]
    taken = {e.job_uid for e in result.evictions} | {r.victim_uid for r in result.reclaims}
    assert taken == {"v0"}


@pytest.mark.parametrize("mem", SIZES, ids=["16Gi", "256Gi", "1Ti"])
def test_of_two_victims_only_the_lowest_priority_goes(mem: int) -> None:
    result = admit(_snapshot(mem, 2))
    assert isinstance(result.decisions["p"], Admit), result.decisions["p"]
    taken = {e.job_uid for e in result.evictions} | {r.victim_uid for r in result.reclaims}
    assert taken == {"v0"}


@pytest.mark.parametrize("mem", SIZES, ids=["16Gi", "256Gi", "1Ti"])
def test_an_exact_fit_under_capability_needs_no_victim(mem: int) -> None:
    result = admit(_snapshot(mem, 1, cap=2 * mem))
    assert isinstance(result.decisions["p"], Admit)
    assert not result.evictions and not result.reclaims
    assert result.queues["q"].allocated["memory"] == 2 * mem


@pytest.mark.parametrize("mem", SIZES, ids=["16Gi", "256Gi", "1Ti"])
def test_one_byte_over_capability_is_over(mem: int) -> None:
    snap = _snapshot(mem, 0, cap=mem - 1)
    assert not isinstance(admit(snap).decisions["p"], Admit)
