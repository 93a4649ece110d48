"""Volcano's gang-aware preemption and reclaim (pkg/scheduler/actions/gangpreempt/gangpreempt_test.go
and gangreclaim/gangreclaim_test.go, TestSelectDomainVictims_*), each case named after its source test
and run through admission over several cycles.

Those tests ask one domain (a HyperNode, here the one node n1 of 1 cpu) which victims it gives a
pending 1-cpu job; here the job arrives and the cycles settle. A victim job whose only pod is its
minAvailable goes whole (Volcano's "whole bundle", which vglobal always allows); a job annotated
preemptable "false" never goes. The last case is the HyperNode-first eviction those actions exist
for: a hard-topology gang takes its victims inside one HyperNode of the tier it allows.
"""

from __future__ import annotations

from tests.unit.admission.ports.harness import Case, Pending, Pod, Running, hypernode, nodes, queue, r

NODE = {"n1": r("1")}


def _victim(name: str, q: str, preemptable: bool = True) -> Running:
    return Running(name, q, (Pod(name, "n1", r("1"), preemptable),), priority=10, min_available=1)


def _incoming(q: str) -> Pending:
    return Pending("preemptor", q, r("1"), priority=100)


def test_selectdomainvictims_respectallowwholebundle() -> None:
    """The victim's one running pod is its minAvailable: it goes as a whole bundle."""
    out = Case([queue("q1")], NODE, [_victim("victim", "q1")], [_incoming("q1")]).run()
    assert out.taken == {"victim"} and out.running == {"preemptor"}


def test_selectdomainvictims_respectvictimjobpreemptable() -> None:
    """gangpreempt: the victim job is preemptable "false": nothing is taken."""
    out = Case([queue("q1")], NODE, [_victim("victim", "q1", preemptable=False)], [_incoming("q1")]).run()
    assert out.taken == set() and out.running == {"victim"}


def test_selectdomainvictims_allowvictimjobwhenpreemptableunset() -> None:
    """gangpreempt: no preemptable annotation: the victim may go."""
    out = Case([queue("q1")], NODE, [_victim("victim", "q1")], [_incoming("q1")]).run()
    assert out.taken == {"victim"}


def _over(name: str, q: str, preemptable: bool = True) -> Running:
    """Two 1-cpu pods on n1, minAvailable 1: one of them may go alone."""
    pods = (Pod(f"{name}-0", "n1", r("1"), preemptable), Pod(f"{name}-1", "n1", r("1"), preemptable))
    return Running(name, q, pods, priority=10, min_available=1)


# The reclaimer's queue deserves the cpu it asks for (weight 4 of 6 on 3 cpu), the others are over
# their share: the tests' stub plugin evicts whatever it is offered, proportion asks this much.
RECLAIM_QUEUES = [queue("q1", weight=4), queue("q2", weight=1, reclaimable=True), queue("q3", weight=1, reclaimable=False)]


def test_selectdomainvictims_reclaimablecrossqueueonly() -> None:
    """q2 is reclaimable, q3 is not; the node is full and the reclaimer of q1 needs one cpu: a pod of
    q2's job goes, q3's job stays whole."""
    case = Case(
        RECLAIM_QUEUES,
        {"n1": r("3")},
        [_over("victim", "q2"), _victim("other", "q3")],
        [Pending("reclaimer", "q1", r("1"), priority=100)],
    )
    out = case.run()
    assert out.pods_evicted() == ["victim-1"] and out.running == {"victim", "other", "reclaimer"}


def test_selectdomainvictims_respectvictimjobpreemptable_reclaim() -> None:
    """gangreclaim: the only victim of the other queue is preemptable "false": nothing is taken."""
    case = Case(RECLAIM_QUEUES, {"n1": r("2")}, [_over("victim", "q2", preemptable=False)], [Pending("reclaimer", "q1", r("1"))])
    out = case.run()
    assert out.taken == set() and out.running == {"victim"}


def test_selectdomainvictims_allowvictimjobwhenpreemptableunset_reclaim() -> None:
    case = Case(RECLAIM_QUEUES, {"n1": r("2")}, [_over("victim", "q2")], [Pending("reclaimer", "q1", r("1"))])
    out = case.run()
    assert out.pods_evicted() == ["victim-1"] and out.running == {"victim", "reclaimer"}


def test_hard_topology_gang_takes_its_victims_inside_one_hypernode() -> None:
    """Two ToRs of two 4-cpu nodes, each node filled by a one-pod job; the two lowest priorities sit
    in different ToRs. A gang of two 4-cpu pods of priority 10, hard topology at tier 1, takes its
    victims inside one ToR (never the lowest of each ToR, which would leave it room in neither) and
    runs there; fillers it displaced may then preempt lower ones in their turn."""
    filled = {"n1": 1, "n2": 5, "n3": 2, "n4": 5}
    tors = {"tor-a": ["n1", "n2"], "tor-b": ["n3", "n4"]}
    case = Case(
        [queue("q1")],
        nodes("n", 4, r("4")),
        [Running(f"fill-{n}", "q1", (Pod(f"fill-{n}-0", n, r("4")),), priority=p, min_available=1) for n, p in filled.items()],
        [Pending("gang", "q1", r("4"), pods=2, priority=10, topology=("hard", 1))],
        hypernodes={"c1": [hypernode(name, 1, members) for name, members in tors.items()]},
    )
    out = case.run()
    for_gang = {v.victim_uid for res in out.results for v in res.reclaims if v.for_uid == "gang"}
    assert len(for_gang) == 2
    assert any(for_gang == {f"fill-{n}" for n in members} for members in tors.values()), for_gang
    assert "gang" in out.running
    assert any({p["node"] for p in case.pods["gang"]} == set(m) for m in tors.values())
