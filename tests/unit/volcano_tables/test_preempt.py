"""preempt_test.go TestPreempt: Volcano's preempt cases through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "preempt_test.go TestPreempt"
TIERS = conf(
    "preempt",
    [
        {"name": "conformance"},
        {"name": "gang"},
        {"name": "priority"},
        {"name": "proportion"},
    ],
)
CLASSES = {"high-priority": 100000, "low-priority": 10}
YES, NO = {"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}
POD_LEVEL = "preemption of single pods: the hub takes whole victim jobs only"


def _case(name: str, **kw: object) -> Case:
    kw.setdefault("classes", CLASSES)
    kw.setdefault("conf", TIERS)
    kw.setdefault("binds", None)
    return Case(GO, name, **kw)  # type: ignore[arg-type]


def low(name: str, min_member: int = 1, **kw: object) -> Group:
    return Group(name, queue="q1", min_member=min_member, priority_class="low-priority", **kw)  # type: ignore[arg-type]


def high(name: str, min_member: int = 1, **kw: object) -> Group:
    return Group(name, queue="q1", min_member=min_member, priority_class="high-priority", **kw)  # type: ignore[arg-type]


CASES = [
    _case(
        "do not preempt if there are enough idle resources",
        nodes=[Node("n1", "10", "10G", pods=10)],
        groups=[Group("pg1", queue="q1", min_member=3, task_min={"": 3})],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1"),
            Pod("c1/preemptee2", "pg1", node="n1"),
            Pod("c1/preemptor1", "pg1"),
        ],
        queues=[Queue("q1")],
        evicted=[],
    ),
    _case(
        "do not preempt if job is pipelined",
        nodes=[Node("n1", "3", "3G", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, task_min={"": 2}),
            Group("pg2", queue="q1", min_member=1, task_min={"": 2}),
        ],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1"),
            Pod("c1/preemptee2", "pg1", node="n1"),
            Pod("c1/preemptee3", "pg2", node="n1"),
            Pod("c1/preemptor2", "pg2"),
        ],
        queues=[Queue("q1")],
        evicted=[],
    ),
    _case(
        "preempt one task of different job to fit both jobs on one node",
        nodes=[Node("n1", "2", "2G", pods=10)],
        groups=[low("pg1", task_min={"": 2}), high("pg2", task_min={"": 2})],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee2", "pg1", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg2"),
            Pod("c1/preemptor2", "pg2"),
        ],
        queues=[Queue("q1")],
        evicted=["c1/preemptee1"],
    ),
    _case(
        "preempt enough tasks to fit large task of different job",
        nodes=[Node("n1", "6", "6G", pods=10)],
        groups=[low("pg1", task_min={"": 3}), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee3", "pg1", node="n1", labels=NO),
            Pod("c1/preemptor1", "pg2", cpu="5", memory="5G"),
        ],
        queues=[Queue("q1")],
        evicted=["c1/preemptee2", "c1/preemptee1"],
    ),
    _case(
        "preempt low priority job in same queue",
        nodes=[Node("n1", "12", "12G", pods=10)],
        groups=[low("pg1", min_member=0), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", cpu="3", memory="3G", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        queues=[Queue("q1", capability={"cpu": "4", "memory": "4G"})],
        evicted=["c1/preemptee1"],
    ),
    _case(
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        nodes=[Node("n1", "12", "12G", pods=10)],
        groups=[low("pg1"), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", cpu="3", memory="3G", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        queues=[Queue("q1", capability={"cpu": "6", "memory": "6G"})],
        evicted=[],
    ),
    _case(
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        nodes=[Node("n1", "12", "12G", pods=10)],
        groups=[low("pg1"), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=NO),
            Pod("c1/preemptee2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee3", "pg1", node="n1", labels=YES, priority_class="high-priority"),
            Pod("c1/preemptor1", "pg2"),
        ],
        queues=[Queue("q1", capability={"cpu": "3", "memory": "3G"})],
        evicted=["c1/preemptee2"],
    ),
    _case(
        "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        nodes=[Node("n1", "12", "12G", pods=1)],
        groups=[low("pg1", min_member=0), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", cpu="0", memory="0", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        queues=[Queue("q1", capability={"cpu": "6", "memory": "6G"})],
        evicted=["c1/preemptee1"],
    ),
    _case(
        "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        nodes=[Node("n1", "12", "12G", pods=1)],
        groups=[low("pg1", min_member=0), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", cpu="0", memory="0", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", cpu="0", memory="0"),
        ],
        queues=[Queue("q1", capability={"cpu": "6", "memory": "6G"})],
        evicted=["c1/preemptee1"],
    ),
    _case(
        "can not preempt resources when task preemption policy is never",
        nodes=[Node("n1", "1", "1Gi", pods=1)],
        groups=[low("pg1", min_member=0), high("pg2")],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", preemption_policy="Never"),
        ],
        queues=[Queue("q1")],
        evicted=[],
        waiting=["pg2"],
    ),
    _case(
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        nodes=[Node("n1", "10", "10G", pods=10)],
        groups=[low("pg1", task_min={"": 2}), high("pg2", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee2", "pg1", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", cpu="4", memory="4G"),
        ],
        queues=[Queue("q1", capability={"cpu": "3", "memory": "3G"})],
        evicted=[],
        waiting=["pg2"],
    ),
    _case(
        "only commit evictions on the node where preemption succeeds",
        nodes=[Node("n1", "3", "3G", pods=10), Node("n2", "4", "4G", pods=10)],
        groups=[low("pg1", min_member=0), high("pg2", task_min={"": 1}), low("pg3", min_member=0)],
        pods=[
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptee2", "pg3", cpu="4", memory="4G", node="n2", labels=YES),
            Pod("c1/preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        queues=[Queue("q1", capability={"cpu": "6", "memory": "6G"})],
        evicted=["c1/preemptee2"],
        # The hub evicts preemptee2 as Volcano does and nominates n2 for the preemptor (its
        # Dispatch carries the node). The agent's preempt then leaves the preemptor alone, as
        # Volcano's taskEligibleToPreempt does while the nominated node fits it, instead of taking
        # preemptee1 on n1 (tests/unit/scheduler/test_nominated_nodes.py: allocate binds it there).
    ),
    _case(
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
        nodes=[Node("n1", "2", "2G", pods=10)],
        groups=[
            Group("pg1", queue="q1", min_member=1, task_min={"": 1}),
            Group("pg2", queue="q2", min_member=0, priority_class="low-priority"),
            Group("pg3", queue="q2", min_member=1, task_min={"": 1}, priority_class="high-priority"),
        ],
        pods=[
            Pod("c1/q1-runner1", "pg1", node="n1"),
            Pod("c1/q2-preemptee1", "pg2", node="n1", labels=YES),
            Pod("c1/q2-preemptor1", "pg3"),
        ],
        queues=[Queue("q1"), Queue("q2", capability={"cpu": "4", "memory": "4G"})],
        evicted=["c1/q2-preemptee1"],
    ),
]

TOPOLOGY_AWARE = "preempt_test.go TestTopologyAwarePreempt"
HOST = "kubernetes.io/hostname"


def _anti(labels: dict[str, str]) -> dict[str, object]:
    """buildPodWithPodAntiAffinity: required anti-affinity to pods with all of the pod's own labels."""
    term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": HOST}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


# The cases of TestTopologyAwarePreempt that TestPreempt does not have (the others are the same).
CASES += [
    Case(
        TOPOLOGY_AWARE,
        "preempt low-priority pod when high-priority pod has PodAntiAffinity conflict",
        nodes=[Node("n1", "2", "2Gi", pods=2, labels={HOST: "n1"})],
        groups=[low("pg1", min_member=0), low("pg2", min_member=0), high("pg3", task_min={"": 1})],
        pods=[
            Pod("c1/preemptee1", "pg2", node="n1", labels=YES),
            Pod(
                "c1/preemptee2",
                "pg1",
                node="n1",
                labels={**YES, "test": "test"},
                affinity=_anti({**YES, "test": "test"}),
            ),
            Pod("c1/preemptor1", "pg3", labels={"test": "test"}, affinity=_anti({"test": "test"})),
        ],
        queues=[Queue("q1", capability={"cpu": "2", "memory": "2G"})],
        conf=conf("preempt", ["conformance", "gang", "priority", "proportion", "predicates"]),
        classes=CLASSES,
        evicted=["c1/preemptee2"],
        # The hub sees the preemptor's required anti-affinity and the running pods' labels: n1
        # stays closed to it while preemptee2 runs there, so preemptee2 is the victim, not the
        # newer preemptee1 that victim order would take first.
    ),
    Case(
        TOPOLOGY_AWARE,
        "preemption with priority queues",
        nodes=[Node("n1", "2", "2Gi", pods=2)],
        groups=[
            Group("pg3", queue="q2", min_member=1, phase="Running", priority_class="high-priority"),
            Group("pg1", queue="q1", phase="Running", priority_class="low-priority"),
            Group("pg2", queue="q1", min_member=1, priority_class="high-priority"),
        ],
        pods=[
            Pod("c1/preemptee2", "pg3", node="n1", labels=YES),
            Pod("c1/preemptee1", "pg1", node="n1", labels=YES),
            Pod("c1/preemptor1", "pg2", preemption_policy="PreemptLowerPriority"),
        ],
        queues=[
            Queue(
                "q1",
                priority=1,
                deserved={"cpu": "1", "memory": "1G"},
                capability={"cpu": "1", "memory": "1G"},
            ),
            Queue(
                "q2",
                priority=10,
                deserved={"cpu": "1", "memory": "1G"},
                capability={"cpu": "1", "memory": "1G"},
            ),
        ],
        conf=conf("preempt", ["conformance", "gang", "priority", "proportion", "predicates"]),
        classes=CLASSES,
        evicted=["c1/preemptee1"],
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_preempt(case: Case) -> None:
    check(case)
