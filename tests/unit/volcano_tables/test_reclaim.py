"""reclaim_test.go TestReclaim: Volcano's reclaim cases through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "reclaim_test.go TestReclaim"
YES, NO = {"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}
PRIORITIES = {"low-priority": 100, "mid-priority": 500, "high-priority": 1000}


def tiers(*names: str) -> str:
    """The Go test's one tier, restricted to the plugins the case registers (in its order)."""
    order = ("conformance", "gang", "proportion", "capacity", "priority")
    return conf("reclaim", [n for n in order if n in names])


def _case(name: str, **kw: object) -> Case:
    return Case(GO, name, **kw)  # type: ignore[arg-type]


CASES = [
    _case(
        "Two Queue with one Queue overusing resource, should reclaim",
        nodes=[Node("n1", "3", "3Gi", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, priority_class="low-priority"),
            Group("pg2", queue="q2", min_member=1, priority_class="high-priority"),
        ],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=NO),
            Pod("c1/preemptee2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee3", "pg1", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg2"),
        ],
        queues=[Queue("q1"), Queue("q2")],
        conf=tiers("conformance", "gang", "proportion"),
        evicted=["c1/preemptee2"],
    ),
    _case(
        "sort reclaimees when reclaiming from overusing queue",
        nodes=[Node("n1", "4", "4Gi", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, priority_class="mid-priority"),
            Group("pg2", queue="q2", min_member=1, priority_class="low-priority"),
            Group("pg3", queue="q3", min_member=1, priority_class="high-priority"),
        ],
        pods=[
            Pod("c1/preemptee1-1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee1-2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee2-1", "pg2", node="n1", labels=YES),
            Pod("c1/preemptee2-2", "pg2", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg3"),
        ],
        queues=[Queue("q1"), Queue("q2"), Queue("q3")],
        conf=tiers("conformance", "gang", "priority", "proportion"),
        classes=PRIORITIES,
        evicted=["c1/preemptee2-1"],
    ),
    _case(
        "sort reclaimees when reclaiming from overusing queues with different queue priority",
        nodes=[Node("n1", "4", "4Gi", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, priority_class="mid-priority"),
            Group("pg2", queue="q2", min_member=1, priority_class="mid-priority"),
            Group("pg3", queue="q3", min_member=1, priority_class="mid-priority"),
        ],
        pods=[
            Pod("c1/preemptee1-1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee1-2", "pg1", node="n1", labels=NO),
            Pod("c1/preemptee2-1", "pg2", node="n1", labels=YES),
            Pod("c1/preemptee2-2", "pg2", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg3"),
        ],
        queues=[Queue("q1", priority=5), Queue("q2", priority=10), Queue("q3", priority=1)],
        conf=tiers("conformance", "gang", "proportion"),
        evicted=["c1/preemptee1-1"],
    ),
    _case(
        "can not reclaim resources when task preemption policy is never",
        nodes=[Node("n1", "1", "1Gi", pods=1)],
        groups=[
            Group("pg1", queue="q1", priority_class="low-priority"),
            Group("pg2", queue="q2", priority_class="high-priority"),
        ],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", preemption_policy="Never"),
        ],
        queues=[Queue("q1", weight=5), Queue("q2", weight=10)],
        conf=tiers("conformance", "gang", "proportion"),
        classes={"low-priority": 100, "high-priority": 1000},
        evicted=[],
    ),
    _case(
        "can not reclaim resources when queue is not open(proportion plugin)",
        nodes=[Node("n1", "3", "3Gi", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, phase="Running"),
            Group("pg2", queue="q2", min_member=1),
        ],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=NO),
            Pod("c1/preemptee2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee3", "pg1", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg2"),
        ],
        queues=[Queue("q1"), Queue("q2", state="Closed")],
        conf=tiers("conformance", "gang", "proportion"),
        evicted=[],
        waiting=["pg2"],
    ),
    _case(
        "can not reclaim resources when queue is not open(capacity plugin)",
        nodes=[Node("n1", "3", "3Gi", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, phase="Running"),
            Group("pg2", queue="q2", min_member=1),
        ],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=NO),
            Pod("c1/preemptee2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee3", "pg1", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg2"),
        ],
        queues=[Queue("q1"), Queue("q2", state="Closed")],
        conf=tiers("conformance", "gang", "capacity"),
        evicted=[],
        waiting=["pg2"],
    ),
    _case(
        "Node available resources should be included in reclaimed resources",
        nodes=[Node("n1", "10", "2Gi", pods=10)],
        groups=[
            Group("pg1", queue="q1", phase="Running", priority_class="mid-priority"),
            Group("pg2", queue="q2", phase="Running", priority_class="mid-priority"),
            Group("pg3", queue="q3", min_member=1, priority_class="mid-priority"),
        ],
        pods=[
            Pod("c1/preemptee1-1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee2-1", "pg2", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg3", cpu="2"),
        ],
        queues=[Queue("q1", priority=1), Queue("q2", priority=2), Queue("q3", weight=3)],
        conf=tiers("conformance", "gang", "priority", "proportion"),
        classes=PRIORITIES,
        evicted=["c1/preemptee1-1"],
    ),
    _case(
        "Reclaim succeeds for second task when first task has PreemptionPolicy=Never",
        nodes=[Node("n1", "2", "2G", pods=10)],
        groups=[
            Group("pg-victim", queue="q1", min_member=1, phase="Running", priority_class="low-priority"),
            Group("pg-preemptor", queue="q2", min_member=2, priority_class="high-priority-no-preempt"),
        ],
        pods=[
            Pod("c1/victim-pod-no", "pg-victim", node="n1", labels=NO),
            Pod("c1/victim-pod", "pg-victim", node="n1", labels=YES),
            Pod("c1/preemptor-task1-non-preemptable", "pg-preemptor", preemption_policy="Never"),
            Pod("c1/preemptor-task2-preemptable", "pg-preemptor"),
        ],
        queues=[Queue("q1"), Queue("q2")],
        conf=tiers("conformance", "gang", "proportion", "priority"),
        classes={"low-priority": 100, "high-priority-no-preempt": 1000, "high-priority-can-preempt": 900},
        # Volcano evicts victim-pod though the preemptor's gang of 2 cannot fit in its place (the
        # node has room for 1): the hub takes victims only where they let the gang fit.
        evicted=[],
        differs="the hub reclaims only victims whose eviction lets the reclaimer's gang fit",
    ),
    _case(
        "only commit evictions on the node where reclaim succeeds",
        nodes=[Node("n1", "10", "10G", pods=10)],
        groups=[
            Group("pg-victim", queue="q1", phase="Running", priority_class="low-priority"),
            Group("pg-preemptor", queue="q2", min_member=1, priority_class="low-priority"),
        ],
        pods=[
            Pod("c1/victim-n1", "pg-victim", cpu="2", memory="2G", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg-preemptor", cpu="3", memory="3G"),
        ],
        queues=[Queue("q1"), Queue("q2", weight=9)],
        conf=tiers("conformance", "gang", "proportion"),
        evicted=[],
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_reclaim(case: Case) -> None:
    check(case)
