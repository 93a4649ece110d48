"""The victim side of reclaim follows Volcano's Reclaimable rule: a queue may lose a job while its
allocation is above its deserved on some resource the job's pods request (proportion
`!allocated.LessEqual(deserved)`, capacity on the request's dimensions), and while it keeps its
guarantee. A queue under its deserved on one resource but over it on another gives up jobs that
use the other."""

from __future__ import annotations

from tests.unit.admission.builders import cluster, job, jobs, res
from vglobal.admission import QueueSnap
from vglobal.sim.rounds import AdmissionRounds


def _cpus(sim: AdmissionRounds, queue: str) -> int:
    return sim.usage(queue).get("cpu", 0) // 1000


def test_armada_balancing_three_queues() -> None:
    """Armada preempting_queue_scheduler_test.go "balancing three queues": one node of 32 cpu and
    256Gi; A and B hold 16 one-cpu 4Gi jobs each (with more waiting), C arrives with 10: the fair
    answer is 11/11/10, and it then stays."""
    sim = AdmissionRounds.of(
        [QueueSnap("A"), QueueSnap("B"), QueueSnap("C")],
        [cluster("c", 1, res(cpu=32, mem_gi=256))],
        jobs("a", "A", res(cpu=1, mem_gi=4), 32) + jobs("b", "B", res(cpu=1, mem_gi=4), 32),
        reclaim_after=0.0,
    )
    sim.step()
    assert (_cpus(sim, "A"), _cpus(sim, "B")) == (16, 16)
    sim.submit(*jobs("c", "C", res(cpu=1, mem_gi=4), 10, waiting_since=sim.now))
    for _ in range(12):
        sim.step()
    assert (_cpus(sim, "A"), _cpus(sim, "B"), _cpus(sim, "C")) == (11, 11, 10)
    # steady state: nothing more is taken
    before = len(sim.results)
    for _ in range(3):
        sim.step()
    assert not any(r.reclaims or r.evictions for r in sim.results[before:])


def _short_of_memory_behind_a_big_job() -> AdmissionRounds:
    """One node of 16 cpu and 128Gi: A holds 12 cpu in cpu-heavy jobs (above its deserved cpu),
    B 120Gi in three 40Gi jobs (above its deserved memory); C arrives with a job bigger than its
    deserved memory first, then one that fits its share."""
    sim = AdmissionRounds.of(
        [QueueSnap("A"), QueueSnap("B"), QueueSnap("C")],
        [cluster("c", 1, res(cpu=16, mem_gi=128))],
        jobs("a", "A", res(cpu=3, mem_gi=1), 4) + jobs("b", "B", res(cpu=1, mem_gi=40), 3),
        reclaim_after=0.0,
    )
    sim.step()
    big = job("c0", "C", res(cpu=2, mem_gi=100), created=sim.now, waiting_since=sim.now)
    sim.submit(big, job("c1", "C", res(cpu=1, mem_gi=30), created=sim.now + 1, waiting_since=sim.now))
    return sim


def test_a_job_bigger_than_its_share_does_not_keep_its_queue_at_zero() -> None:
    """C's first job is short of its share on cpu only (it asks for more memory than C deserves),
    and freeing cpu does not make room for its memory; C's next job is short on both and takes a
    job of B, which is over its deserved memory (before: the first job's failed plan closed reclaim
    to the whole queue for the cycle, every cycle: C stayed at zero with A and B above their
    deserved)."""
    sim = _short_of_memory_behind_a_big_job()
    for _ in range(4):
        sim.step()
    assert "c1" in sim.placements
    assert sim.usage("C").get("cpu", 0) == 1000
