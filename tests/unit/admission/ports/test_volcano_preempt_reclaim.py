"""Volcano's preempt and reclaim tables (pkg/scheduler/actions/preempt/preempt_test.go TestPreempt and
TestTopologyAwarePreempt, actions/reclaim/reclaim_test.go TestReclaim), each case named after its
source's ``Name`` and run through admission over several cycles.

Mapping: a PodGroup is a job (minMember = minAvailable, its PriorityClass the job's priority), each of
its pods a task of one pod (so ``volcano.sh/preemptable`` and a pod's own priority stay per pod); a
Queue is a QueueSnap (weight, capability, deserved, priority, state); the nodes are one cluster's.
Volcano's pending pods of a job that already runs its gang are elastic pods: the agent places them,
admission takes nothing for them.
"""

from __future__ import annotations

import pytest

from tests.unit.admission.ports.harness import Case, Pending, Pod, Running, queue, r

HIGH, MID, LOW = 100000, 500, 10


def pods(job_pods: list[tuple[str, str, str, str]], *, pinned: tuple[str, ...] = (), prio: dict[str, int] | None = None) -> tuple[Pod, ...]:
    """(name, node, cpu, mem) per pod; ``pinned`` are annotated preemptable: "false"."""
    prio = prio or {}
    return tuple(Pod(n, node, r(c, m), n not in pinned, prio.get(n)) for n, node, c, m in job_pods)


# ---- TestPreempt


def test_do_not_preempt_if_there_are_enough_idle_resources() -> None:
    """pg1 (minMember 3) runs 2 pods, its third is pending on a 10-cpu node: elastic, nothing taken."""
    case = Case(
        [queue("q1")],
        {"n1": r(10, "10G", pods=10)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G")]))],
    )
    out = case.run(4)
    assert out.evicted == set() and out.running == {"pg1"}


def test_do_not_preempt_if_job_is_pipelined() -> None:
    """pg1 and pg2 (minMember 1) each run their gang on a full node; pg2's pending pod is elastic."""
    case = Case(
        [queue("q1")],
        {"n1": r(3, "3G", pods=10)},
        [
            Running("pg1", "q1", pods([("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G")]), min_available=1),
            Running("pg2", "q1", pods([("preemptee3", "n1", "1", "1G")]), min_available=1),
        ],
    )
    out = case.run(4)
    assert out.evicted == set() and out.running == {"pg1", "pg2"}


def test_preempt_one_task_of_different_job_to_fit_both_jobs_on_one_node() -> None:
    case = Case(
        [queue("q1")],
        {"n1": r(2, "2G", pods=10)},
        [
            Running(
                "pg1", "q1", pods([("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G")], pinned=("preemptee2",)),
                priority=LOW, min_available=1,
            )
        ],
        [Pending("pg2", "q1", r(1, "1G"), pods=2, priority=HIGH, min_available=1)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1"]
    assert out.running == {"pg1", "pg2"}


def test_preempt_enough_tasks_to_fit_large_task_of_different_job() -> None:
    case = Case(
        [queue("q1")],
        {"n1": r(6, "6G", pods=10)},
        [
            Running(
                "pg1",
                "q1",
                pods(
                    [("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G"), ("preemptee3", "n1", "1", "1G")],
                    pinned=("preemptee3",),
                ),
                priority=LOW,
                min_available=1,
            )
        ],
        [Pending("pg2", "q1", r(5, "5G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1", "preemptee2"]
    assert "pg2" in out.running


def test_preempt_low_priority_job_in_same_queue() -> None:
    """The node has room; the queue's capability (4 cpu) does not."""
    case = Case(
        [queue("q1", capability=r(4, "4G"))],
        {"n1": r(12, "12G", pods=10)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "3", "3G")]), priority=LOW, min_available=0)],
        [Pending("pg2", "q1", r(3, "3G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1"]
    assert "pg2" in out.running


def test_preempt_low_priority_job_in_same_queue_allocatable_and_has_enough_resource_dont_preempt() -> None:
    case = Case(
        [queue("q1", capability=r(6, "6G"))],
        {"n1": r(12, "12G", pods=10)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "3", "3G")]), priority=LOW, min_available=1)],
        [Pending("pg2", "q1", r(3, "3G"), priority=HIGH)],
    )
    out = case.run()
    assert out.evicted == set() and out.running == {"pg1", "pg2"}


def test_preempt_low_priority_job_in_same_queue_but_not_pod_with_preemptable_false_or_higher_priority() -> None:
    case = Case(
        [queue("q1", capability=r(3, "3G"))],
        {"n1": r(12, "12G", pods=10)},
        [
            Running(
                "pg1",
                "q1",
                pods(
                    [("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G"), ("preemptee3", "n1", "1", "1G")],
                    pinned=("preemptee1",),
                    prio={"preemptee3": HIGH},
                ),
                priority=LOW,
                min_available=1,
            )
        ],
        [Pending("pg2", "q1", r(1, "1G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee2"]
    assert "pg2" in out.running


def test_unbesteffort_high_priority_pod_preempt_besteffort_low_priority_pod_in_same_queue() -> None:
    """The node has one pod slot, held by a BestEffort pod."""
    case = Case(
        [queue("q1", capability=r(6, "6G"))],
        {"n1": r(12, "12G", pods=1)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "0", "0")]), priority=LOW, min_available=0)],
        [Pending("pg2", "q1", r(3, "3G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1"]
    assert "pg2" in out.running


def test_besteffort_high_priority_pod_preempt_besteffort_low_priority_pod_in_same_queue() -> None:
    case = Case(
        [queue("q1", capability=r(6, "6G"))],
        {"n1": r(12, "12G", pods=1)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "0", "0")]), priority=LOW, min_available=0)],
        [Pending("pg2", "q1", r(), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1"]
    assert "pg2" in out.running


def test_can_not_preempt_resources_when_task_preemption_policy_is_never() -> None:
    case = Case(
        [queue("q1")],
        {"n1": r(1, "1Gi", pods=1)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "1", "1G")]), priority=LOW, min_available=0)],
        [Pending("pg2", "q1", r(1, "1G"), priority=HIGH, preemption_policy="Never")],
    )
    out = case.run()
    assert out.evicted == set() and out.running == {"pg1"}


def test_rollback_evictions_when_preemptor_exceeds_queue_capacity_after_evicting_victims() -> None:
    """4 cpu in a queue of capability 3: evicting every victim would not let it in, so none goes."""
    case = Case(
        [queue("q1", capability=r(3, "3G"))],
        {"n1": r(10, "10G", pods=10)},
        [
            Running(
                "pg1", "q1", pods([("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G")]), priority=LOW, min_available=1
            )
        ],
        [Pending("pg2", "q1", r(4, "4G"), priority=HIGH)],
    )
    out = case.run()
    assert out.evicted == set() and out.running == {"pg1"}


def test_only_commit_evictions_on_the_node_where_preemption_succeeds() -> None:
    """Evicting preemptee1 on n1 would make node room but leave the queue over its capability;
    preemptee2 on n2 makes both."""
    case = Case(
        [queue("q1", capability=r(6, "6G"))],
        {"n1": r(3, "3G", pods=10), "n2": r(4, "4G", pods=10)},
        [
            Running("pg1", "q1", pods([("preemptee1", "n1", "1", "1G")]), priority=LOW, min_available=0),
            Running("pg3", "q1", pods([("preemptee2", "n2", "4", "4G")]), priority=LOW, min_available=0),
        ],
        [Pending("pg2", "q1", r(3, "3G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee2"]
    assert out.running == {"pg1", "pg2"}


def test_multi_queue_preemptortasks_must_not_be_overwritten_by_intra_job_preemption_of_another_queue() -> None:
    case = Case(
        [queue("q1"), queue("q2", capability=r(4, "4G"))],
        {"n1": r(2, "2G", pods=10)},
        [
            Running("pg1", "q1", pods([("q1-runner1", "n1", "1", "1G")]), min_available=1),
            Running("pg2", "q2", pods([("q2-preemptee1", "n1", "1", "1G")]), priority=LOW, min_available=0),
        ],
        [Pending("pg3", "q2", r(1, "1G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["q2-preemptee1"]
    assert out.running == {"pg1", "pg3"}


def test_preemption_with_priority_queues() -> None:
    """TestTopologyAwarePreempt: q1 (priority 1) holds its whole capability; its high-priority job
    preempts its low one, not the pod of q2 (priority 10)."""
    case = Case(
        [
            queue("q1", priority=1, deserved=r(1, "1G"), capability=r(1, "1G")),
            queue("q2", priority=10, deserved=r(1, "1G"), capability=r(1, "1G")),
        ],
        {"n1": r(2, "2Gi", pods=2)},
        [
            Running("pg3", "q2", pods([("preemptee2", "n1", "1", "1G")]), priority=HIGH, min_available=1),
            Running("pg1", "q1", pods([("preemptee1", "n1", "1", "1G")]), priority=LOW, min_available=0),
        ],
        [Pending("pg2", "q1", r(1, "1G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1"]
    assert out.running == {"pg3", "pg2"}


# ---- TestReclaim


def _overusing_q1() -> tuple[Pod, ...]:
    return pods(
        [("preemptee1", "n1", "1", "1G"), ("preemptee2", "n1", "1", "1G"), ("preemptee3", "n1", "1", "1G")],
        pinned=("preemptee1", "preemptee3"),
    )


def test_two_queue_with_one_queue_overusing_resource_should_reclaim() -> None:
    case = Case(
        [queue("q1"), queue("q2")],
        {"n1": r(3, "3Gi", pods=10)},
        [Running("pg1", "q1", _overusing_q1(), priority=LOW, min_available=1)],
        [Pending("pg2", "q2", r(1, "1G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee2"]
    assert out.running == {"pg1", "pg2"}


def test_sort_reclaimees_when_reclaiming_from_overusing_queue() -> None:
    """q1 and q2 each hold 2 of 4 cpu (deserved 4/3 each); q2's job has the lower priority."""
    case = Case(
        [queue("q1"), queue("q2"), queue("q3")],
        {"n1": r(4, "4Gi", pods=10)},
        [
            Running("pg1", "q1", pods([("preemptee1-1", "n1", "1", "1G"), ("preemptee1-2", "n1", "1", "1G")]), priority=MID, min_available=1),
            Running(
                "pg2", "q2", pods([("preemptee2-1", "n1", "1", "1G"), ("preemptee2-2", "n1", "1", "1G")], pinned=("preemptee2-2",)),
                priority=LOW, min_available=1,
            ),
        ],
        [Pending("pg3", "q3", r(1, "1G"), priority=HIGH)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee2-1"]
    assert out.running == {"pg1", "pg2", "pg3"}


def test_sort_reclaimees_when_reclaiming_from_overusing_queues_with_different_queue_priority() -> None:
    """Equal job priorities; the victim comes from the queue of lowest priority that is over its share
    (q3, priority 1, is the reclaimer; q1, priority 5, is below q2's 10)."""
    case = Case(
        [queue("q1", priority=5), queue("q2", priority=10), queue("q3", priority=1)],
        {"n1": r(4, "4Gi", pods=10)},
        [
            Running(
                "pg1", "q1", pods([("preemptee1-1", "n1", "1", "1G"), ("preemptee1-2", "n1", "1", "1G")], pinned=("preemptee1-2",)),
                priority=MID, min_available=1,
            ),
            Running(
                "pg2", "q2", pods([("preemptee2-1", "n1", "1", "1G"), ("preemptee2-2", "n1", "1", "1G")], pinned=("preemptee2-2",)),
                priority=MID, min_available=1,
            ),
        ],
        [Pending("pg3", "q3", r(1, "1G"), priority=MID)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1-1"]
    assert out.running == {"pg1", "pg2", "pg3"}


def test_can_not_reclaim_resources_when_task_preemption_policy_is_never() -> None:
    case = Case(
        [queue("q1", weight=5), queue("q2", weight=10)],
        {"n1": r(1, "1Gi", pods=1)},
        [Running("pg1", "q1", pods([("preemptee1", "n1", "1", "1G")]), priority=100, min_available=0)],
        [Pending("pg2", "q2", r(1, "1G"), priority=1000, preemption_policy="Never")],
    )
    out = case.run()
    assert out.evicted == set() and "pg1" in out.running


@pytest.mark.parametrize("plugin", ["proportion plugin", "capacity plugin"])
def test_can_not_reclaim_resources_when_queue_is_not_open(plugin: str) -> None:
    """(proportion plugin) and (capacity plugin): the reclaimer's queue is Closed."""
    case = Case(
        [queue("q1"), queue("q2", open=False)],
        {"n1": r(3, "3Gi", pods=10)},
        [Running("pg1", "q1", _overusing_q1(), priority=LOW, min_available=1)],
        [Pending("pg2", "q2", r(1, "1G"), priority=HIGH)],
    )
    out = case.run()
    assert out.evicted == set() and out.running == {"pg1"}


def test_node_available_resources_should_be_included_in_reclaimed_resources() -> None:
    """cpu is free on the node, memory is not: one 1G pod of an overusing queue is enough."""
    case = Case(
        [queue("q1", weight=1), queue("q2", weight=2), queue("q3", weight=3)],
        {"n1": r(10, "2Gi", pods=10)},
        [
            Running("pg1", "q1", pods([("preemptee1-1", "n1", "1", "1G")]), priority=MID, min_available=0),
            Running("pg2", "q2", pods([("preemptee2-1", "n1", "1", "1G")]), priority=MID, min_available=0),
        ],
        [Pending("pg3", "q3", r(2, "1G"), priority=MID)],
    )
    out = case.run()
    assert out.pods_evicted() == ["preemptee1-1"]
    assert out.running == {"pg2", "pg3"}


def _second_task_case(second: str | None) -> Case:
    """The job's class says Never and its first task's pod too; ``second``: its second task's."""
    return Case(
        [queue("q1"), queue("q2")],
        {"n1": r(2, "2G", pods=10)},
        [
            Running(
                "pg-victim", "q1", pods([("victim-pod-no", "n1", "1", "1G"), ("victim-pod", "n1", "1", "1G")], pinned=("victim-pod-no",)),
                priority=100, min_available=1,
            )
        ],
        [
            Pending(
                "pg-preemptor", "q2", shapes=((r(1, "1G"), 1), (r(1, "1G"), 1)), priority=1000,
                min_available=1, preemption_policy="Never", task_policies=("Never", second),
            )
        ],
    )


def test_reclaim_succeeds_for_second_task_when_first_task_has_preemptionpolicy_never() -> None:
    """The job's PriorityClass says Never and its first task's pod says so too; its second task's pod
    says nothing in Volcano's case (built without a class, so Volcano reads no policy on it) and
    Volcano reclaims the one preemptable pod of the overusing queue for it. A pod made from a
    template gets its class's policy, so here the second template says PreemptLowerPriority itself
    (as the case's high-priority-can-preempt class would). The case's tiers do not enable gang's
    JobPipelined, so Volcano commits the eviction with one of the minMember 2 pods placed; vglobal
    takes a victim only for a gang it admits, so the gang here is that one pod (minAvailable 1)."""
    out = _second_task_case("PreemptLowerPriority").run()
    assert out.pods_evicted() == ["victim-pod"]


def test_no_reclaim_when_every_task_has_preemptionpolicy_never() -> None:
    """The variant where the second task's pod gets the job's class (Never) too: no task may reclaim."""
    out = _second_task_case(None).run()
    assert out.pods_evicted() == []


def test_only_commit_evictions_on_the_node_where_reclaim_succeeds() -> None:
    case = Case(
        [queue("q1", weight=1), queue("q2", weight=9)],
        {"n1": r(10, "10G", pods=10)},
        [Running("pg-victim", "q1", pods([("victim-n1", "n1", "2", "2G")]), priority=LOW, min_available=0)],
        [Pending("pg-preemptor", "q2", r(3, "3G"), priority=LOW)],
    )
    out = case.run()
    assert out.evicted == set() and out.running == {"pg-victim", "pg-preemptor"}
