"""Kueue's scheduler table (pkg/scheduler/scheduler_test.go TestSchedule), the cases with one resource
flavor, each named after its source key and run through admission over several cycles.

Mapping as in test_kueue_preemption.py: nominal quota is ``deserved``, nominal plus borrowing limit
``capability``; the "sales" ClusterQueue (50 cpu, no cohort) gets a cluster larger than its quota,
the "eng" cohort's on-demand flavor (eng-alpha 50 cpu borrowing up to 50 more, eng-beta 50 borrowing
up to 10) is a 100-cpu cluster. A pod set of N pods is a job of N pods; its minimum count (partial
admission) is the job's minAvailable. Cases that choose among flavors are not ported (flavors are not
Volcano's).
"""

from __future__ import annotations

from tests.unit.admission.ports.harness import Case, Pending, Pod, Running, nodes, queue, r

SALES = [queue("sales", capability=r(50))]
SALES_NODES = nodes("n", 2, r(64))
ENG = [queue("eng-alpha", deserved=r(50), capability=r(100)), queue("eng-beta", deserved=r(50), capability=r(60))]
ENG_NODES = nodes("n", 4, r(25))


def test_single_clusterqueue_full() -> None:
    assigned = Running("assigned", "sales", tuple(Pod(f"assigned-{k}", "n1", r(1)) for k in range(40)))
    out = Case(SALES, SALES_NODES, [assigned], [Pending("new", "sales", r(1), pods=11)]).run()
    assert out.running == {"assigned"} and out.taken == set()


def test_partial_admission_single_variable_pod_set() -> None:
    """Kueue admits 25 of the 50 two-cpu pods (minimum 20) in the 50-cpu queue. Admission admits the
    gang of 20 (40 cpu) and charges it; the agent places pods beyond it while the queue's capability
    allows (the sim scenario kueue-partial-admission-single-variable-pod-set shows the 25)."""
    case = Case(SALES, SALES_NODES, (), [Pending("new", "sales", r(2), pods=50, min_available=20)])
    out = case.run()
    assert out.running == {"new"}
    assert case.usage("sales")["cpu"] == 40_000


def test_not_enough_resources() -> None:
    case = Case(SALES, SALES_NODES, (), [Pending("new", "sales", r(100))])
    out = case.run()
    assert out.running == set()
    assert "capability" in out.results[-1].decisions["new"].reason  # type: ignore[union-attr]


def test_admit_in_same_cohort_with_no_borrowing() -> None:
    todo = [Pending("alpha-new", "eng-alpha", r(1), pods=40), Pending("beta-new", "eng-beta", r(1), pods=40)]
    out = Case(ENG, ENG_NODES, (), todo).run()
    assert out.running == {"alpha-new", "beta-new"}


def test_cannot_borrow_if_cohort_was_assigned_and_would_result_in_overadmission() -> None:
    todo = [Pending("alpha-new", "eng-alpha", r(1), pods=45), Pending("beta-new", "eng-beta", r(1), pods=56)]
    out = Case(ENG, ENG_NODES, (), todo).run()
    assert out.running == {"alpha-new"} and out.taken == set()


def test_can_borrow_if_cohort_was_assigned_and_will_not_result_in_overadmission() -> None:
    todo = [Pending("alpha-new", "eng-alpha", r(1), pods=45), Pending("beta-new", "eng-beta", r(1), pods=55)]
    out = Case(ENG, ENG_NODES, (), todo).run()
    assert out.running == {"alpha-new", "beta-new"}
