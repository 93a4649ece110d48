"""Queue tree: deserved by weighted water-filling, realCap, roll-up; figures in QueueStatus."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.unit.admission.builders import GPU, cluster, gpus, jobs, res
from vglobal.admission import ClusterSnap, PendingJob, QueueSnap, QueueStatus, Snapshot, admit
from vglobal.model.resources import EMPTY, ResourceVector

ONE_CLUSTER_64 = (cluster("c1", 8, gpus(8)),)


def figures(
    queues: list[QueueSnap], pending: list[PendingJob], clusters: tuple[ClusterSnap, ...] = ONE_CLUSTER_64
) -> Mapping[str, QueueStatus]:
    result = admit(Snapshot(now=0, queues=tuple(queues), clusters=clusters, pending=tuple(pending)))
    return result.queues


@pytest.mark.parametrize(
    ("case", "queues", "demand", "expected"),
    [
        (
            "3:1 weights split 64 GPUs 48/16",
            [QueueSnap("a", weight=3), QueueSnap("b", weight=1)],
            {"a": 20, "b": 20},
            {"a": 48, "b": 16},
        ),
        (
            "a capped by its demand gives the rest to b",
            [QueueSnap("a"), QueueSnap("b")],
            {"a": 1, "b": 20},
            {"a": 8, "b": 56},
        ),
        (
            "capability caps the share, the rest flows on",
            [QueueSnap("a", capability=gpus(8)), QueueSnap("b")],
            {"a": 20, "b": 20},
            {"a": 8, "b": 56},
        ),
        (
            "guarantee raises a queue without demand",
            [QueueSnap("a", guarantee=gpus(16)), QueueSnap("b")],
            {"b": 20},
            {"a": 16, "b": 48},
        ),
        (
            "explicit deserved is taken as given",
            [QueueSnap("a", deserved=gpus(40)), QueueSnap("b")],
            {"a": 20, "b": 20},
            {"a": 40, "b": 24},
        ),
        ("no demand, no deserved", [QueueSnap("a"), QueueSnap("b")], {"b": 2}, {"a": 0, "b": 16}),
    ],
)
def test_deserved_water_filling(
    case: str, queues: list[QueueSnap], demand: dict[str, int], expected: dict[str, int]
) -> None:
    pending = [j for q, n in demand.items() for j in jobs(f"{q}-", q, gpus(8), n)]
    got = figures(queues, pending)
    assert {q: got[q].deserved[GPU] // 1000 for q in expected} == expected, case
    assert got["root"].deserved == gpus(64)


def test_hierarchy_splits_level_by_level_and_rolls_usage_up() -> None:
    queues = [
        QueueSnap("org", weight=1),
        QueueSnap("org-a", parent="org", weight=1, allocated=gpus(8)),
        QueueSnap("org-b", parent="org", weight=3),
        QueueSnap("solo", weight=1, allocated=gpus(4)),
    ]
    pending = (
        jobs("a", "org-a", gpus(8), 10) + jobs("b", "org-b", gpus(8), 10) + jobs("s", "solo", gpus(8), 10)
    )
    got = figures(queues, pending, clusters=(cluster("c1", 16, gpus(8)),))  # 128 GPUs
    assert got["org"].deserved == gpus(64) and got["solo"].deserved == gpus(64)
    assert got["org-a"].deserved == gpus(16) and got["org-b"].deserved == gpus(48)
    # usage before this cycle's admissions rolls up: org = org-a + org-b, root = everything
    assert got["org"].allocated == got["org-a"].allocated + got["org-b"].allocated
    assert got["root"].allocated == got["org"].allocated + got["solo"].allocated
    assert got["org"].pending + got["org"].admitted == 20


def test_real_capability_follows_capacity_plugin() -> None:
    # realCap(child) = min(capability with parent's dims inherited, pos(realCap(parent) - sum g) + g)
    queues = [
        QueueSnap("p", capability=ResourceVector({GPU: 40_000, "cpu": 100_000})),
        QueueSnap("p-x", parent="p", guarantee=gpus(10), capability=ResourceVector({"cpu": 8_000})),
        QueueSnap("p-y", parent="p", guarantee=gpus(20)),
        QueueSnap("q"),
    ]
    got = figures(queues, [], clusters=(cluster("c1", 8, res(cpu=64, gpu=8)),))
    assert got["p"].real_capability == ResourceVector({GPU: 40_000, "cpu": 100_000})
    # p-x: gpu min(40 inherited, (40 - 30) + 10) = 20; cpu from its own capability
    assert got["p-x"].real_capability == ResourceVector({GPU: 20_000, "cpu": 8_000})
    # p-y: gpu (40 - 30) + 20 = 30; cpu inherited 100
    assert got["p-y"].real_capability == ResourceVector({GPU: 30_000, "cpu": 100_000})
    assert got["q"].real_capability == ResourceVector({GPU: 64_000, "cpu": 512_000})


def test_unschedulable_clusters_do_not_count_as_capacity() -> None:
    clusters = (cluster("up", 4, gpus(8)), cluster("down", 4, gpus(8), schedulable=False))
    got = figures([QueueSnap("a")], jobs("a", "a", gpus(8), 10), clusters=clusters)
    assert got["root"].deserved == gpus(32)
    assert got["a"].deserved == gpus(32)
    assert got["a"].guarantee == EMPTY
