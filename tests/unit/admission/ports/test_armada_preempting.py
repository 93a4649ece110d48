"""Armada's preempting queue scheduler table (internal/scheduler/scheduling/preempting_queue_scheduler_test.go
TestPreemptingQueueScheduler), each case named after its source key, its rounds run through admission
over several cycles each.

Mapping: Armada's nodes are one cluster's (N32CpuNodes: 32 cpu, 256Gi); a queue's priority factor f
is a weight 1/f; a job is a job of one pod (a gang: one job of as many pods); priority classes
priority-0..3 are PriorityClass values 0..3, priority-2-non-preemptible and priority-3 pods are
annotated preemptable "false". Job names are <queue><round>[batch].<index>, created in submit order.

Armada's fair-share preemption is Volcano's reclaim between queues (deserved by weight, capped by
demand). Armada's urgency-based preemption crosses queues; Volcano preempts by priority only inside
a queue and reclaims across queues only for a queue below its deserved share: where that changes the
outcome, the case says so and asserts Volcano's. Armada fails a preempted job; here a job taken
whole waits again (Volcano re-creates its pods), so it may run again later where there is room.
"""

from __future__ import annotations

from tests.unit.admission.ports.harness import Case, Outcome, Pending, nodes, queue, r

N32 = r(32, "256Gi")


class Rounds:
    """Queues by weight over ``count`` 32-cpu nodes; each ``round`` submits jobs and settles."""

    def __init__(self, weights: dict[str, int], count: int = 1) -> None:
        self.case = Case([queue(q, weight=w) for q, w in weights.items()], nodes("n", count, N32))
        self.t = 0.0
        self.round = 0
        self.sent: dict[str, int] = {}  # per queue and round, the batches sent

    def jobs(
        self, q: str, n: int, cpu: str = "1", mem: str = "4Gi", prio: int = 0, *, preemptable: bool = True, gang: bool = False
    ) -> list[str]:
        """``n`` jobs of one pod (a gang: one job of ``n`` pods); their names."""
        key = f"{q}{self.round}"
        batch = self.sent[key] = self.sent.get(key, 0) + 1
        if batch > 1:
            key += "abcdefgh"[batch - 2]
        if gang:
            names = [f"{key}.gang"]
            todo = [Pending(names[0], q, r(cpu, mem), pods=n, priority=prio, created=self.t, preemptable=preemptable)]
        else:
            names = [f"{key}.{i:02d}" for i in range(n)]
            todo = [
                Pending(name, q, r(cpu, mem), priority=prio, created=self.t + i / 1000, preemptable=preemptable)
                for i, name in enumerate(names)
            ]
        self.t += 1.0
        self.case.submit(*todo)
        return names

    def settle(self, cycles: int = 12) -> Outcome:
        self.round += 1
        return self.case.run(cycles)


def _of(names: list[str], lo: int, hi: int) -> set[str]:
    return set(names[lo : hi + 1])


def test_balancing_three_queues() -> None:
    s = Rounds({"A": 1, "B": 1, "C": 1})
    a = s.jobs("A", 32)
    assert s.settle().running == set(a)
    b = s.jobs("B", 32)
    out = s.settle()
    assert out.taken == _of(a, 16, 31)
    assert out.running == _of(a, 0, 15) | _of(b, 0, 15)
    c = s.jobs("C", 10)
    out = s.settle()
    assert out.taken == _of(a, 11, 31) | _of(b, 11, 15)
    assert out.running == _of(a, 0, 10) | _of(b, 0, 10) | set(c)
    # steady state: one more job per queue changes nothing
    more = s.jobs("A", 1) + s.jobs("B", 1) + s.jobs("C", 1)
    out = s.settle()
    assert out.taken == _of(a, 11, 31) | _of(b, 11, 15)
    assert not out.running & set(more)


def _two_weighted(weights: dict[str, int]) -> None:
    s = Rounds(weights)
    a = s.jobs("A", 32)
    s.settle()
    b = s.jobs("B", 32)
    out = s.settle()
    assert out.taken == _of(a, 11, 31)
    assert out.running == _of(a, 0, 10) | _of(b, 0, 20)
    more = s.jobs("A", 1) + s.jobs("B", 1)
    out = s.settle()
    assert out.taken == _of(a, 11, 31) and not out.running & set(more)


def test_balancing_two_queues_weighted() -> None:
    """Priority factors A 2, B 1: weights 1 and 2 (B deserves 21.3 of 32 cpu, A 10.7)."""
    _two_weighted({"A": 1, "B": 2})


def test_balancing_two_queues_weighted_with_inactive_queues() -> None:
    """C (factor 1) and D (factor 100) hold no jobs: they change no one's share."""
    _two_weighted({"A": 2, "B": 4, "C": 4, "D": 1})


def _not_improving(first: str, second: str) -> None:
    s = Rounds({"A": 1, "B": 1})
    small = s.jobs(first, 32)
    s.settle()
    big = s.jobs(second, 1, "32", "256Gi")
    out = s.settle()
    assert out.taken == set() and out.running == set(small) and not out.running & set(big)


def test_avoid_preemption_when_not_improving_fairness() -> None:
    """B's one 32-cpu job would take it past its deserved half: no reclaim."""
    _not_improving("A", "B")


def test_avoid_preemption_when_not_improving_fairness_reverse_queue_naming() -> None:
    _not_improving("B", "A")


def test_preemption_when_improving_fairness() -> None:
    s = Rounds({"A": 1, "B": 1}, count=2)
    a = s.jobs("A", 64)
    s.settle()
    b = s.jobs("B", 1, "32", "256Gi")
    out = s.settle()
    assert out.taken == _of(a, 32, 63)
    assert out.running == _of(a, 0, 31) | set(b)


def _same_node(first: str, second: str) -> None:
    s = Rounds({"A": 1, "B": 1}, count=2)
    x = s.jobs(first, 32)
    s.settle()
    y = s.jobs(second, 32)
    out = s.settle()
    assert out.taken == set() and out.running == set(x) | set(y)


def test_reschedule_onto_same_node() -> None:
    _same_node("A", "B")


def test_reschedule_onto_same_node_reverse_order() -> None:
    _same_node("B", "A")


def test_urgency_based_preemption_gangs() -> None:
    """Two 32-pod gangs arrive together on one 32-cpu node, A's of priority 0, B's of priority 1.
    Armada preempts across queues by priority and runs B's. Volcano orders the queues by share (equal
    here, then by name) and neither reclaims (a whole node is past either's deserved half): A's gang
    runs, B's waits, nothing is taken."""
    s = Rounds({"A": 1, "B": 1})
    a = s.jobs("A", 32, gang=True)
    b = s.jobs("B", 32, prio=1, gang=True)
    out = s.settle()
    assert out.taken == set() and out.running == set(a) and not out.running & set(b)


def test_urgency_based_preemption_stability() -> None:
    """A's 33rd job waits; B's one job of priority 3 takes A's newest running job. In Volcano it is
    reclaim that takes it (B deserves the one cpu it asks, A is over its share)."""
    s = Rounds({"A": 1, "B": 1})
    a = s.jobs("A", 33, prio=2)
    out = s.settle()
    assert out.running == _of(a, 0, 31)
    b = s.jobs("B", 1, prio=3, preemptable=False)
    out = s.settle()
    assert out.taken == {a[31]} and out.running == _of(a, 0, 30) | set(b)
    more = s.jobs("A", 1, prio=2)
    out = s.settle()
    assert out.taken == {a[31]} and out.running == _of(a, 0, 30) | set(b) and not out.running & set(more)


def test_avoid_urgency_based_preemption_when_possible() -> None:
    s = Rounds({"A": 1}, count=2)
    first = s.jobs("A", 1, "32", "256Gi")
    s.settle()
    second = s.jobs("A", 1, "32", "256Gi", prio=1)
    out = s.settle()
    assert out.taken == set() and out.running == set(first) | set(second)


def test_preempt_in_order_of_priority() -> None:
    s = Rounds({"A": 1}, count=2)
    p1 = s.jobs("A", 1, "32", "256Gi", prio=1)
    s.settle()
    p0 = s.jobs("A", 1, "32", "256Gi", prio=0)
    s.settle()
    p2 = s.jobs("A", 1, "32", "256Gi", prio=2)
    out = s.settle()
    assert out.taken == set(p0) and out.running == set(p1) | set(p2)


def test_avoid_urgency_based_preemption_when_possible_cross_queue() -> None:
    """Three whole-node jobs of A (priority 1), B (0) and C (2) fill three nodes; D's (priority 3,
    not preemptable) arrives. Armada preempts B's across queues. Volcano: D would be over its deserved
    quarter with a whole node, so it does not reclaim, and priority preempts only inside a queue: D
    waits, nothing is taken."""
    s = Rounds({"A": 1, "B": 1, "C": 1, "D": 1}, count=3)
    run = []
    for q, prio in (("A", 1), ("B", 0), ("C", 2)):
        run += s.jobs(q, 1, "32", "256Gi", prio=prio)
        s.settle()
    d = s.jobs("D", 1, "32", "256Gi", prio=3, preemptable=False)
    out = s.settle()
    assert out.taken == set() and out.running == set(run) and not out.running & set(d)


def test_gang_preemption() -> None:
    """A and B hold 16 one-cpu jobs each, C's 32-pod gang fills the rest; A sends 17 jobs of priority 1.
    Armada preempts C's whole gang across queues for them. Volcano's preempt action runs first: A's
    new jobs take the place of A's own 16 jobs of priority 0 (lower priority, same queue). The 17th
    would reclaim, but C's only victims are pods of a gang at its minAvailable, which Volcano's gang
    plugin never takes: it waits, and C's gang runs on."""
    s = Rounds({"A": 1, "B": 1, "C": 1}, count=2)
    a = s.jobs("A", 16)
    b = s.jobs("B", 16)
    s.settle()
    c = s.jobs("C", 32, gang=True)
    out = s.settle()
    assert out.running == set(a) | set(b) | set(c)
    a2 = s.jobs("A", 17, prio=1)
    out = s.settle()
    assert out.taken == set(a)
    assert out.running == set(b) | set(c) | set(a2[:16])


def test_priority_class_preemption_two_classes() -> None:
    s = Rounds({"A": 1})
    p0 = s.jobs("A", 1, "32", "256Gi")
    s.settle()
    p1 = s.jobs("A", 1, "32", "256Gi", prio=1)
    out = s.settle()
    assert out.taken == set(p0) and out.running == set(p1)


def test_priority_class_preemption_cross_queue() -> None:
    """B's whole-node job of priority 1 against A's of priority 0: Armada preempts across queues.
    Volcano: a whole node is past B's deserved half, so B does not reclaim; nothing is taken."""
    s = Rounds({"A": 1, "B": 1})
    a = s.jobs("A", 1, "32", "256Gi")
    s.settle()
    b = s.jobs("B", 1, "32", "256Gi", prio=1)
    out = s.settle()
    assert out.taken == set() and out.running == set(a) and not out.running & set(b)


def test_priority_class_preemption_not_scheduled() -> None:
    """Two whole-node jobs of one queue arrive together: the one of priority 1 goes first."""
    s = Rounds({"A": 1})
    low = s.jobs("A", 1, "32", "256Gi")
    high = s.jobs("A", 1, "32", "256Gi", prio=1)
    out = s.settle()
    assert out.taken == set() and out.running == set(high) and not out.running & set(low)


def test_priority_class_preemption_through_multiple_levels() -> None:
    """A (priority 0) and B (priority 1) fill the node with 16 jobs each; C sends 17 of priority 2.
    Armada preempts all of A's and one of B's. Volcano reclaims for C while C stays within its
    deserved share (32 / 3: 10 jobs), from A and B while each is over its own, A and B in turn as the
    fair order takes them (their newest jobs first): C runs 10, A and B keep 11 each."""
    s = Rounds({"A": 1, "B": 1, "C": 1})
    a = s.jobs("A", 16)
    b = s.jobs("B", 16, prio=1)
    s.settle()
    c = s.jobs("C", 17, prio=2)
    out = s.settle()
    assert len(out.running & set(c)) == 10
    assert len(out.running & set(a)) == 11 and len(out.running & set(b)) == 11
    assert out.taken == _of(a, 11, 15) | _of(b, 11, 15)


def test_priority_class_preemption_four_classes() -> None:
    """One queue: 10 jobs each of priority 0, 1 and 2, then 24 of priority 3 (not preemptable) on a
    32-cpu node: the 22 lowest go, priority 0 first, then 1, then the newest of priority 2."""
    s = Rounds({"A": 1})
    p0 = s.jobs("A", 10)
    p1 = s.jobs("A", 10, prio=1)
    p2 = s.jobs("A", 10, prio=2)
    s.settle()
    p3 = s.jobs("A", 24, prio=3, preemptable=False)
    out = s.settle()
    assert out.taken == set(p0) | set(p1) | _of(p2, 8, 9)
    assert out.running == _of(p2, 0, 7) | set(p3)


def test_queued_jobs_are_not_preempted_cross_queue() -> None:
    """A (priority 0) and B (priority 1) send 32 jobs each at once: Armada runs B's 32. Volcano
    shares the node by fair share: 16 each, nothing taken."""
    s = Rounds({"A": 1, "B": 1})
    a = s.jobs("A", 32)
    b = s.jobs("B", 32, prio=1)
    out = s.settle()
    assert out.taken == set()
    assert len(out.running & set(a)) == 16 and len(out.running & set(b)) == 16


def test_queued_jobs_are_not_preempted_cross_queue_multiple_rounds() -> None:
    s = Rounds({"A": 1, "B": 1})
    a = s.jobs("A", 16, prio=1)
    s.settle()
    a2 = s.jobs("A", 16)
    b = s.jobs("B", 32, prio=1)
    out = s.settle()
    assert out.taken == set() and out.running == set(a) | _of(b, 0, 15) and not out.running & set(a2)


def test_oversubscribed_eviction_does_not_evict_non_preemptible() -> None:
    """A runs one preemptable and three non-preemptable 16-cpu jobs on two nodes; B sends one of
    priority 3 and one non-preemptable of priority 2. B is below its deserved half: it reclaims A's one
    preemptable job for its first job; its second waits (A's others may never go)."""
    s = Rounds({"A": 1, "B": 1}, count=2)
    a = s.jobs("A", 1, "16", "128Gi", prio=2) + s.jobs("A", 3, "16", "128Gi", prio=2, preemptable=False)
    out = s.settle()
    assert out.running == set(a)
    b = s.jobs("B", 1, "16", "128Gi", prio=3, preemptable=False) + s.jobs(
        "B", 1, "16", "128Gi", prio=2, preemptable=False
    )
    out = s.settle()
    assert out.taken == {a[0]} and out.running == set(a[1:]) | {b[0]}


def test_dominantresourcefairness() -> None:
    """A's jobs ask 1 cpu 16Gi, B's 1 cpu 4Gi, 32 each at once on 32 cpu 256Gi: by dominant share A
    runs 10 and B 22."""
    s = Rounds({"A": 1, "B": 1})
    a = s.jobs("A", 32, "1", "16Gi")
    b = s.jobs("B", 32, "1", "4Gi")
    out = s.settle()
    assert out.taken == set()
    assert out.running == _of(a, 0, 9) | _of(b, 0, 21)
