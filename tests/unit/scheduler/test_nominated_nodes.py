"""Nominated nodes (Volcano's nominatedNodeName, per job here): the nodes the hub freed for a job by
preemption or reclaim, which its Dispatch carries. allocate tries them before every other node;
preempt leaves a task alone while one of them fits it or a lower-priority pod there is leaving."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.scheduler.sched_table import Group, build_state, conf, node, pod, queue
from vglobal.scheduler import TaskStatus, parse_conf, run_cycle
from vglobal.scheduler.api import ClusterSnapshot

R = TaskStatus.Running
PREEMPTABLE = {"annotations": {"volcano.sh/preemptable": "true"}}
# binpack prefers the fuller node: n1 below
ALLOCATE = parse_conf(conf("allocate", ["gang", "priority"], ["predicates", "binpack"]))
PREEMPT = parse_conf(conf("preempt", ["conformance", "gang", "priority"], ["predicates"]))


def _nominate(state: ClusterSnapshot, job: str, *nodes: str) -> ClusterSnapshot:
    jobs = tuple(replace(j, nominated_nodes=nodes) if j.uid == job else j for j in state.jobs)
    return replace(state, jobs=jobs)


def _allocate_state() -> ClusterSnapshot:
    return build_state(
        [node("n1", "4", "4G"), node("n2", "4", "4G")],
        [Group("c1/run", "q1", min_member=1, phase="Running"), Group("c1/new", "q1", min_member=1)],
        [pod("c1/r1", "c1/run", "2", "2G", status=R, node="n1"), pod("c1/p1", "c1/new", "2", "2G")],
        [queue("q1")],
    )


def test_allocate_binds_on_the_nominated_node_before_a_better_scored_one() -> None:
    assert run_cycle(_allocate_state(), ALLOCATE).binds == {"c1/p1": "n1"}  # binpack's choice
    nominated = _nominate(_allocate_state(), "c1/new", "n2")
    assert run_cycle(nominated, ALLOCATE).binds == {"c1/p1": "n2"}


def test_a_nominated_node_that_no_longer_fits_is_passed_over() -> None:
    state = _nominate(_allocate_state(), "c1/new", "n2", "gone")
    state = replace(state, nodes=(state.nodes[0], node("n2", "1", "1G")))
    assert run_cycle(state, ALLOCATE).binds == {"c1/p1": "n1"}


def _preempt_state(victim_status: TaskStatus = R) -> ClusterSnapshot:
    return build_state(
        [node("n1", "2", "2G"), node("n2", "2", "2G")],
        [
            Group("c1/low", "q1", min_member=0, priority=10, phase="Running"),
            Group("c1/high", "q1", min_member=1, task_min={"w": 1}, priority=1000),
        ],
        [
            pod("c1/low1", "c1/low", "2", "2G", status=R, node="n1", **PREEMPTABLE),
            pod("c1/low2", "c1/low", "2", "2G", status=victim_status, node="n2", **PREEMPTABLE),
            pod("c1/p1", "c1/high", "2", "2G"),
        ],
        [queue("q1")],
    )


def test_preempt_takes_a_victim_without_a_nomination() -> None:
    assert run_cycle(_preempt_state(), PREEMPT).evictions == ("c1/low1",)


def test_preempt_leaves_a_task_alone_while_a_lower_priority_pod_leaves_its_nominated_node() -> None:
    leaving = _preempt_state(TaskStatus.Releasing)
    assert run_cycle(leaving, PREEMPT).evictions == ("c1/low1",)  # n2 has no victim to take
    assert run_cycle(_nominate(leaving, "c1/high", "n2"), PREEMPT).evictions == ()


def test_preempt_leaves_a_task_alone_while_its_nominated_node_fits_it() -> None:
    state = _preempt_state()
    # the victim on n2 is gone already
    gone = replace(
        state,
        jobs=tuple(replace(j, tasks=tuple(t for t in j.tasks if t.uid != "c1/low2")) for j in state.jobs),
    )
    assert run_cycle(gone, PREEMPT).evictions == ("c1/low1",)
    assert run_cycle(_nominate(gone, "c1/high", "n2"), PREEMPT).evictions == ()
