"""Claims on room freed by victims (victims/claims.py): reclaim and preemption settle.

Queue a (memory-heavy jobs, below its deserved cpu) reclaims two of b's cpu-heavy jobs; b comes
first in the order (its priority), so without a claim the next cycle gives the freed room back to
b's re-queued jobs and a reclaims again, for ever.
"""

from __future__ import annotations

from tests.unit.admission.builders import admitted, cluster, job, jobs, reason, res
from vglobal.admission import QueueSnap, Wait
from vglobal.model.reasons import WaitKind
from vglobal.sim.rounds import AdmissionRounds


def _livelock() -> AdmissionRounds:
    sim = AdmissionRounds.of(
        [QueueSnap("a"), QueueSnap("b", priority=1)],
        [cluster("c", 2, res(cpu=8, mem_gi=64))],
        [job("a0", "a", res(cpu=1, mem_gi=56), created=0)],
        now=0,
    )
    sim.step()
    sim.submit(*jobs("b", "b", res(cpu=1, mem_gi=1), 15))
    assert len(admitted(sim.step())) == 15  # the cluster's cpu is full
    sim.submit(job("a1", "a", res(cpu=2, mem_gi=56), created=sim.now))
    return sim


def test_a_reclaimer_is_admitted_into_the_room_it_freed_and_its_victims_wait_behind_it() -> None:
    sim = _livelock()
    result = sim.step()
    victims = sorted(r.victim_uid for r in result.reclaims)
    assert victims == ["b13", "b14"] and {r.for_uid for r in result.reclaims} == {"a1"}
    (claim,) = result.claims
    assert (claim.for_uid, claim.cluster, claim.nodes, sorted(claim.victims)) == ("a1", "c", ("c-n01",), victims)
    result = sim.step()
    assert admitted(result) == {"a1": "c"}
    for v in victims:
        assert reason(result, v) == "its room on c is claimed by job ns/a1, which it was taken for, until that job's pods bind"
    assert result.reclaims == ()


def test_reclaim_settles_no_job_is_taken_again_and_again() -> None:
    sim = _livelock()
    taken: list[str] = []
    for _ in range(12):
        taken += [r.victim_uid for r in sim.step().reclaims]
    assert sorted(taken) == ["b13", "b14"]
    assert sim.dispatcher.running["a1"].cluster == "c"
    assert sim.step().claims == ()  # a1's pods bound: the room is its own


def test_a_claimed_job_takes_no_second_victim_before_its_victims_are_reported_gone() -> None:
    sim = _livelock()
    stale = list(sim.placer.clusters())  # the nodes as the agent reports them until the pods go
    first = sim.step().reclaims
    assert len(first) == 2
    for _ in range(3):  # the hub's next cycles may run before the agent's report
        result = sim.dispatcher.cycle(sim.now, stale).result
        sim.now += 1
        assert result.reclaims == () and result.evictions == ()
        wait = result.decisions["a1"]
        assert isinstance(wait, Wait) and wait.kind == WaitKind.Reclaiming
        assert wait.reason.startswith("waiting for its victims to leave c (ns/b14, ns/b13): the room on c-n01 is claimed")
        assert admitted(result) == {}  # nobody else takes the room either
    assert admitted(sim.step()) == {"a1": "c"}  # reported gone


def test_a_claim_expires_after_the_claim_timeout() -> None:
    sim = _livelock()
    stale = list(sim.placer.clusters())
    assert sim.step().claims
    sim.now += sim.rules.policy.claim_timeout
    result = sim.dispatcher.cycle(sim.now, stale).result
    assert all(c.expires > sim.now for c in result.claims)
    assert {r.for_uid for r in result.reclaims} <= {"a1"}
