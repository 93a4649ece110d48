"""preempt and reclaim: scenarios ported from Volcano's preempt and reclaim tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import TaskStatus

R = TaskStatus.Running
PREEMPT_CONF = conf(
    "preempt",
    [{"name": "conformance", "enablePreemptable": True}, {"name": "gang", "enablePreemptable": True}],
)
PREEMPTABLE: dict[str, Any] = {"annotations": {"volcano.sh/preemptable": "true"}}

PREEMPT_CASES = [
    Case(
        "do not preempt if there are enough idle resources",
        nodes=[node("n1", "10", "10G")],
        groups=[Group("c1/pg1", "q1", min_member=3, task_min={"w": 3})],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptor1", "c1/pg1"),
        ],
        queues=[queue("q1")],
        conf=PREEMPT_CONF,
        # the gang has no task to spare (Ready 2 <= minAvailable 3), so nothing is evicted and
        # the preemptor is not pipelined either (Volcano's ValidateVictims needs a victim)
        evicted=[],
        pipelined={},
    ),
    Case(
        "do not preempt if job is pipelined",
        nodes=[node("n1", "3", "3G")],
        groups=[
            Group("c1/pg1", "q1", min_member=1, task_min={"w": 2}),
            Group("c1/pg2", "q1", min_member=1, task_min={"w": 2}),
        ],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee3", "c1/pg2", status=R, node="n1"),
            pod("c1/preemptor2", "c1/pg2"),
        ],
        queues=[queue("q1")],
        conf=PREEMPT_CONF,
        evicted=[],
    ),
    Case(
        "preempt one task of a different job to fit both jobs on one node",
        nodes=[node("n1", "2", "2G")],
        groups=[
            Group("c1/pg1", "q1", min_member=1, task_min={"w": 2}, priority=10),
            Group("c1/pg2", "q1", min_member=1, task_min={"w": 2}, priority=100000),
        ],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1", **PREEMPTABLE),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptor1", "c1/pg2"),
            pod("c1/preemptor2", "c1/pg2"),
        ],
        queues=[queue("q1")],
        conf=PREEMPT_CONF,
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "preempt enough tasks to fit a large task of a different job",
        nodes=[node("n1", "6", "6G")],
        groups=[
            Group("c1/pg1", "q1", min_member=1, task_min={"w": 3}, priority=10),
            Group("c1/pg2", "q1", min_member=1, task_min={"w": 1}, priority=100000),
        ],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1", **PREEMPTABLE),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1", **PREEMPTABLE),
            pod("c1/preemptee3", "c1/pg1", status=R, node="n1", **PREEMPTABLE),
            pod("c1/preemptor1", "c1/pg2", "5", "5G"),
        ],
        queues=[queue("q1")],
        conf=PREEMPT_CONF,
        pipelined={"c1/preemptor1": "n1"},
    ),
]


@pytest.mark.parametrize("case", PREEMPT_CASES, ids=lambda c: c.name)
def test_preempt(case: Case) -> None:
    result = case.check()
    expected = {"one task": 1, "enough tasks": 2}
    for key, count in expected.items():
        if key in case.name:
            assert len(result.evictions) == count


def test_priority_plugin_protects_higher_priority_victims() -> None:
    """With priority in the conf, a low-priority job cannot preempt a high-priority one."""
    case = PREEMPT_CASES[2]
    flipped = Case(
        "flipped priorities",
        nodes=case.nodes,
        groups=[
            Group("c1/pg1", "q1", min_member=1, task_min={"w": 2}, priority=100000),
            Group("c1/pg2", "q1", min_member=1, task_min={"w": 2}, priority=10),
        ],
        pods=case.pods,
        queues=case.queues,
        conf=conf("preempt", ["priority", "conformance", "gang"]),
        evicted=[],
        pipelined={},
    )
    flipped.check()
    allowed = Case(
        "original priorities",
        nodes=case.nodes,
        groups=case.groups,
        pods=case.pods,
        queues=case.queues,
        conf=conf("preempt", ["priority", "conformance", "gang"]),
    )
    assert len(allowed.check().evictions) == 1


def test_preemption_policy_never_does_not_evict() -> None:
    case = PREEMPT_CASES[3]
    never = Case(
        "never",
        nodes=case.nodes,
        groups=[
            case.groups[0],
            Group("c1/pg2", "q1", min_member=1, priority=100000, preemption_policy="Never"),
        ],
        pods=case.pods,
        queues=case.queues,
        conf=PREEMPT_CONF,
        evicted=[],
        pipelined={},
    )
    never.check()


def test_kube_system_pods_are_never_victims() -> None:
    case = PREEMPT_CASES[2]
    pods = [
        pod("kube-system/preemptee1", "c1/pg1", status=R, node="n1"),
        pod("kube-system/preemptee2", "c1/pg1", status=R, node="n1"),
        *case.pods[2:],
    ]
    Case("kube-system", case.nodes, case.groups, pods, case.queues, PREEMPT_CONF, evicted=[]).check()


# One tier, as in Volcano's reclaim tests: a non-empty victim list from an earlier tier would be
# returned before proportion / capacity are asked (reference section 1).
RECLAIM_CONF = conf("reclaim", ["conformance", "gang", "proportion"])

RECLAIM_CASES = [
    Case(
        "two queues, one overusing: reclaim one task for the other",
        nodes=[node("n1", "3", "3Gi")],
        groups=[
            Group("c1/pg1", "q1", min_member=0, phase="Running"),
            Group("c1/pg2", "q2", min_member=1),
        ],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee3", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptor1", "c1/pg2"),
        ],
        queues=[queue("q1"), queue("q2")],
        conf=RECLAIM_CONF,
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "a queue with reclaimable false keeps its tasks",
        nodes=[node("n1", "3", "3Gi")],
        groups=[
            Group("c1/pg1", "q1", min_member=0, phase="Running"),
            Group("c1/pg2", "q2", min_member=1),
        ],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee3", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptor1", "c1/pg2"),
        ],
        queues=[queue("q1", reclaimable=False), queue("q2")],
        conf=RECLAIM_CONF,
        evicted=[],
        pipelined={},
    ),
    Case(
        "no reclaim within the deserved share",
        nodes=[node("n1", "4", "4Gi")],
        groups=[
            Group("c1/pg1", "q1", min_member=0, phase="Running"),
            Group("c1/pg2", "q2", min_member=1),
        ],
        pods=[
            pod("c1/preemptee1", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptee2", "c1/pg1", status=R, node="n1"),
            pod("c1/preemptor1", "c1/pg2", "3", "1Gi"),
        ],
        queues=[queue("q1"), queue("q2")],
        conf=RECLAIM_CONF,
        evicted=[],
    ),
]


@pytest.mark.parametrize("case", RECLAIM_CASES, ids=lambda c: c.name)
def test_reclaim(case: Case) -> None:
    result = case.check()
    if "reclaim one task" in case.name:
        assert len(result.evictions) == 1


def test_capacity_reclaims_from_a_queue_above_its_deserved() -> None:
    cpu2 = ResourceVector.from_quantities({"cpu": "2", "memory": "4Gi"})
    nodes = [node("n1", "4", "8Gi")]
    groups = [Group("c1/pg1", "q1", min_member=0, phase="Running"), Group("c1/pg2", "q2", min_member=1)]
    pods = [pod(f"c1/old-{i}", "c1/pg1", status=R, node="n1") for i in range(4)] + [pod("c1/new-0", "c1/pg2")]
    queues = [queue("q1", deserved=cpu2), queue("q2", deserved=cpu2)]
    result = Case(
        "capacity reclaim",
        nodes,
        groups,
        pods,
        queues,
        conf("reclaim", ["conformance", "gang", "capacity"]),
        pipelined={"c1/new-0": "n1"},
    ).check()
    assert len(result.evictions) == 1
    # within its deserved share q1 keeps everything
    queues = [queue("q1", deserved=ResourceVector.from_quantities({"cpu": "4"})), queue("q2", deserved=cpu2)]
    Case(
        "capacity keep",
        nodes,
        groups,
        pods,
        queues,
        conf("reclaim", ["conformance", "gang", "capacity"]),
        evicted=[],
    ).check()
