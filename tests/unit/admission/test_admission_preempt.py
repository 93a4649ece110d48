"""Preemption inside a queue, as Volcano's preempt action with the gang and priority plugins decides:
one snapshot per case, its running pods on one cluster's nodes, and the evictions admission plans.

Each case names the test of pkg/scheduler/actions/preempt/preempt_test.go it follows. Volcano's
PodGroups are our jobs (minMember = minAvailable) and its nodes one cluster's nodes; a pod's
preemptable annotation and own priority are RunningPod fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from tests.unit.admission.builders import job
from vglobal.admission import (
    AdmissionPolicy,
    AdmissionResult,
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

LOW, HIGH = 1, 100


def cpu(n: float) -> ResourceVector:
    return ResourceVector({"cpu": int(n * 1000), "memory": int(n * 2**30)})


@dataclass(frozen=True)
class Pod:
    name: str
    node: str
    size: float
    preemptable: bool = True
    priority: int | None = None


@dataclass(frozen=True)
class Run:
    uid: str
    pods: tuple[Pod, ...]
    min_available: int
    priority: int = LOW
    created: float = 0.0
    running_since: float = 0.0
    whole_only: bool = False


@dataclass(frozen=True)
class Case:
    name: str  # the Go test case
    nodes: dict[str, float]
    running: tuple[Run, ...]
    preemptor: float  # cpu of each of its gang's pods
    pods: int = 1
    capability: float | None = None
    policy: str = "PreemptLowerPriority"
    min_runtime: float = 0.0
    evicted: frozenset[str] = frozenset()  # pod names
    whole: frozenset[str] = frozenset()  # jobs re-queued
    admitted: bool = True
    others: tuple[str, ...] = field(default_factory=tuple)


def _running(r: Run) -> RunningJob:
    per_node: dict[str, ResourceVector] = {}
    for p in r.pods:
        per_node[p.node] = per_node.get(p.node, ResourceVector()) + cpu(p.size)
    total = ResourceVector()
    for v in per_node.values():
        total = total + v
    return RunningJob(
        uid=r.uid,
        queue="q1",
        cluster="c",
        priority=r.priority,
        created=r.created,
        request=total,
        placements=per_node,
        running_since=r.running_since,
        pods=tuple(RunningPod(p.name, p.node, cpu(p.size), p.preemptable, p.priority) for p in r.pods),
        min_available=r.min_available,
        whole_only=r.whole_only,
    )


def _decide(case: Case) -> AdmissionResult:
    used: dict[str, ResourceVector] = {}
    for r in case.running:
        for p in r.pods:
            used[p.node] = used.get(p.node, ResourceVector()) + cpu(p.size)
    nodes = tuple(
        NodeSnap(n, cpu(size) - used.get(n, ResourceVector()), cpu(size)) for n, size in case.nodes.items()
    )
    alloc = ResourceVector()
    for v in used.values():
        alloc = alloc + v
    cap = None if case.capability is None else cpu(case.capability)
    preemptor = job("preemptor", "q1", cpu(case.preemptor), case.pods, priority=HIGH, created=10)
    preemptor = replace(preemptor, preemption_policy=case.policy)
    return admit(
        Snapshot(
            now=100.0,
            queues=(QueueSnap("q1", capability=cap, allocated=alloc),),
            clusters=(ClusterSnap("c", {}, nodes),),
            pending=(preemptor,),
            running=tuple(_running(r) for r in case.running),
            policy=AdmissionPolicy(reclaim_min_runtime=case.min_runtime),
        )
    )


CASES = [
    Case(
        "preempt one task of different job to fit both jobs on one node",
        nodes={"n1": 2},
        running=(Run("pg1", (Pod("preemptee1", "n1", 1), Pod("preemptee2", "n1", 1, preemptable=False)), 1),),
        preemptor=1,
        evicted=frozenset({"preemptee1"}),
    ),
    Case(
        "preempt enough tasks to fit large task of different job",
        nodes={"n1": 6},
        running=(
            Run(
                "pg1",
                (
                    Pod("preemptee1", "n1", 1),
                    Pod("preemptee2", "n1", 1),
                    Pod("preemptee3", "n1", 1, preemptable=False),
                ),
                1,
            ),
        ),
        preemptor=5,
        evicted=frozenset({"preemptee1", "preemptee2"}),
    ),
    Case(
        "preempt low priority job in same queue",  # the queue's capability, not the node, is full
        nodes={"n1": 12},
        running=(Run("pg1", (Pod("preemptee1", "n1", 3),), 0),),
        preemptor=3,
        capability=4,
        evicted=frozenset({"preemptee1"}),
    ),
    Case(
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        nodes={"n1": 12},
        running=(Run("pg1", (Pod("preemptee1", "n1", 3),), 1),),
        preemptor=3,
        capability=6,
    ),
    Case(
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        nodes={"n1": 12},
        running=(
            Run(
                "pg1",
                (
                    Pod("preemptee1", "n1", 1, preemptable=False),
                    Pod("preemptee2", "n1", 1),
                    Pod("preemptee3", "n1", 1, priority=HIGH),
                ),
                1,
            ),
        ),
        preemptor=1,
        capability=3,
        evicted=frozenset({"preemptee2"}),
    ),
    Case(
        "can not preempt resources when task preemption policy is never",
        nodes={"n1": 1},
        running=(Run("pg1", (Pod("preemptee1", "n1", 1),), 0),),
        preemptor=1,
        policy="Never",
        admitted=False,
    ),
    Case(
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        nodes={"n1": 10},
        running=(Run("pg1", (Pod("preemptee1", "n1", 1), Pod("preemptee2", "n1", 1)), 2),),
        preemptor=4,
        capability=3,
        admitted=False,
    ),
    Case(
        "only commit evictions on the node where preemption succeeds",
        nodes={"n1": 3, "n2": 4},
        running=(
            Run("pg1", (Pod("preemptee1", "n1", 1),), 0),
            Run("pg3", (Pod("preemptee2", "n2", 4),), 0),
        ),
        preemptor=3,
        capability=6,
        evicted=frozenset({"preemptee2"}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_volcano_preempt_cases(case: Case) -> None:
    result = _decide(case)
    decision = result.decisions["preemptor"]
    assert isinstance(decision, Admit) == case.admitted, decision
    assert {p for e in result.evictions for p in e.pods} == case.evicted
    assert {r.victim_uid for r in result.reclaims if r.preempted} == case.whole
    if case.evicted:
        assert isinstance(decision, Admit) and "evicting" in decision.preempting


# Rules of ours beyond Volcano's table (the hub also takes rigid gangs whole, DESIGN 5.3 step 6).
RULES = [
    Case(
        "a rigid gang at its minAvailable goes whole, never below it",
        nodes={"n1": 4},
        running=(Run("rigid", (Pod("r-0", "n1", 2), Pod("r-1", "n1", 2)), 2),),
        preemptor=2,
        whole=frozenset({"rigid"}),
    ),
    Case(
        "surplus pods of an elastic victim go before a whole job",
        nodes={"n1": 4},
        running=(
            Run("rigid", (Pod("r-0", "n1", 1), Pod("r-1", "n1", 1)), 2, created=5),
            Run("elastic", (Pod("e-0", "n1", 1), Pod("e-1", "n1", 1)), 1, created=1),
        ),
        preemptor=1,
        evicted=frozenset({"e-1"}),
    ),
    Case(
        "a gang with a pod that refuses preemption is never taken whole",
        nodes={"n1": 2},
        running=(Run("pinned", (Pod("p-0", "n1", 1, preemptable=False), Pod("p-1", "n1", 1)), 2),),
        preemptor=2,
        admitted=False,
    ),
    Case(
        "a job whose pods come in groups placed whole (an LWS) goes whole, never pod by pod",
        nodes={"n1": 4},
        running=(Run("lws", tuple(Pod(f"l-{i}", "n1", 1) for i in range(4)), 2, whole_only=True),),
        preemptor=1,
        whole=frozenset({"lws"}),
    ),
    Case(
        "a long-running kind's pods say they are not preemptable: it stays whole",
        nodes={"n1": 2},
        running=(
            Run("ray", (Pod("h-0", "n1", 1, preemptable=False), Pod("w-0", "n1", 1, preemptable=False)), 1),
        ),
        preemptor=1,
        admitted=False,
    ),
    Case(
        "no victim of equal priority",
        nodes={"n1": 1},
        running=(Run("same", (Pod("s-0", "n1", 1),), 0, priority=HIGH),),
        preemptor=1,
        admitted=False,
    ),
    Case(
        "a run younger than --reclaim-min-runtime is no victim",
        nodes={"n1": 1},
        running=(Run("young", (Pod("y-0", "n1", 1),), 0, running_since=90.0),),
        preemptor=1,
        min_runtime=60.0,
        admitted=False,
    ),
    Case(
        "newest surplus pod first, by its index (pod 10 after pod 9)",
        nodes={"n1": 11},
        running=(Run("e", tuple(Pod(f"e-w-{i}", "n1", 1) for i in range(11)), 1),),
        preemptor=1,
        evicted=frozenset({"e-w-10"}),
    ),
]


@pytest.mark.parametrize("case", RULES, ids=[c.name for c in RULES])
def test_victim_rules(case: Case) -> None:
    test_volcano_preempt_cases(case)


def test_the_queue_is_charged_the_preemptor_and_given_back_the_victims() -> None:
    case = CASES[2]  # capability 4, victim 3, preemptor 3
    result = _decide(case)
    assert result.queues["q1"].allocated["cpu"] == 3000  # 3 - 3 + 3
