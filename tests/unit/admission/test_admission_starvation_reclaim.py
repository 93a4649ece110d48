"""Starvation guard and cross-cluster reclaim, over several cycles."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, cluster, gpus, job, jobs, reason
from vglobal.admission import QueueSnap
from vglobal.sim.rounds import AdmissionRounds


def test_starving_big_job_reserves_capacity_against_its_own_queue_only() -> None:
    # o is not reclaimable, so big can only wait for o to finish
    sim = AdmissionRounds.of(
        [QueueSnap("o", reclaimable=False), QueueSnap("q"), QueueSnap("x")],
        [cluster("c", 2, gpus(8))],
        jobs("o", "o", gpus(4), 4),
        now=0,
    )
    assert len(admitted(sim.step())) == 4  # o0,o1 on n00; o2,o3 on n01: full
    sim.submit(job("big", "q", gpus(8), created=10), job("big2", "q", gpus(8), created=11))
    sim.submit(*[job(f"s{i}", "q", gpus(4), created=20 + i) for i in range(3)])
    sim.now = 20
    assert admitted(sim.step()) == {}
    sim.finish("o00")
    sim.now = 30
    # not starving yet: no head-of-line blocking, a small job of the same queue backfills
    assert admitted(sim.step()) == {"s0": "c"}
    sim.finish("o01")
    sim.now = 700  # big has waited 690 s > 600 s
    result = sim.step()
    assert admitted(result) == {}
    assert "waiting 690s (over 600s): capacity {nvidia.com/gpu: 8} reserved on c" in reason(result, "big")
    assert reason(result, "s1") == (
        "capacity on c that fits gang 1 pod x {nvidia.com/gpu: 4} is reserved for the starving job ns/big of queue q"
    )
    # one reservation per queue: the next starving job of q waits behind it
    assert reason(result, "big2").endswith("starving, but queued behind the starving job ns/big of queue q")
    # another queue's job is not held back by q's reservation
    sim.submit(job("x0", "x", gpus(4), created=700))
    assert admitted(sim.step()) == {"x0": "c"}
    sim.finish("s0", "x0")
    result = sim.step()
    assert admitted(result) == {"big": "c"}


def test_reclaim_takes_newest_lowest_priority_jobs_down_to_deserved() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a"), QueueSnap("b")],
        [cluster("c", 4, gpus(8))],
        [
            job("a0", "a", gpus(8), created=0),
            job("a1", "a", gpus(8), created=1),
            job("a2", "a", gpus(8), created=2, priority=100),
            job("a3", "a", gpus(8), created=3),
        ],
    )
    assert len(admitted(sim.step())) == 4  # a alone deserves everything
    sim.submit(*jobs("b", "b", gpus(8), 3))
    result = sim.step()
    assert admitted(result) == {}
    # one reclaim per queue and cycle; a3 is the newest of the lowest priority
    assert [(r.victim_uid, r.for_uid) for r in result.reclaims] == [("a3", "b00")]
    assert reason(result, "b00") == (
        "queue b is below its deserved share: reclaiming 1 job on c (ns/a3); gang 1 pod x {nvidia.com/gpu: 8} "
        "is admitted once they stop"
    )
    result = sim.step()
    assert admitted(result) == {"b00": "c"}
    assert [(r.victim_uid, r.for_uid) for r in result.reclaims] == [("a1", "b01")]  # a2 has priority 100
    result = sim.step()
    assert admitted(result) == {"b01": "c"}
    # b02 would take b above its deserved 16: it waits, and a keeps its deserved 16
    assert result.reclaims == ()
    assert reason(result, "b02").startswith("no cluster fits gang")
    assert sim.usage("a") == gpus(16) and sim.usage("b") == gpus(16)
    # the reclaimed jobs are pending again and keep their age
    assert sorted((j.uid, j.created) for j in sim.dispatcher.pending.values() if j.queue == "a") == [
        ("a1", 1.0),
        ("a3", 3.0),
    ]


def test_reclaim_never_takes_a_guarantee_or_a_non_reclaimable_queue() -> None:
    for victim_queue in (QueueSnap("a", guarantee=gpus(28)), QueueSnap("a", reclaimable=False)):
        sim = AdmissionRounds.of(
            [victim_queue, QueueSnap("b")], [cluster("c", 4, gpus(8))], jobs("a", "a", gpus(8), 4)
        )
        assert len(admitted(sim.step())) == 4
        sim.submit(*jobs("b", "b", gpus(4), 1))
        result = sim.step()
        assert result.reclaims == (), victim_queue
        assert reason(result, "b00").startswith("no cluster fits gang")


def test_reclaim_plans_all_victims_on_one_cluster() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a"), QueueSnap("b")],
        [cluster("x", 1, gpus(8)), cluster("y", 1, gpus(8))],
        jobs("a", "a", gpus(4), 4),
    )
    assert admitted(sim.step()) == {"a00": "x", "a01": "x", "a02": "y", "a03": "y"}
    sim.submit(*jobs("b", "b", gpus(8), 1))
    result = sim.step()
    assert sorted((r.victim_uid, r.cluster) for r in result.reclaims) == [("a00", "x"), ("a01", "x")]
    assert admitted(sim.step()) == {"b00": "x"}


def test_reclaim_after_makes_a_job_wait_before_it_reclaims() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a"), QueueSnap("b")], [cluster("c", 2, gpus(8))], jobs("a", "a", gpus(8), 2)
    )
    sim.step()
    sim.submit(job("b0", "b", gpus(8), created=sim.now))
    sim.rules.policy = replace(sim.rules.policy, reclaim_after=300.0)
    assert sim.step().reclaims == ()  # waited 0 s
    sim.now += 300
    assert [r.victim_uid for r in sim.step().reclaims] == ["a01"]


def test_reclaim_min_runtime_protects_jobs_that_just_started() -> None:
    def setup(min_runtime: float) -> AdmissionRounds:
        sim = AdmissionRounds.of(
            [QueueSnap("a"), QueueSnap("b")], [cluster("c", 2, gpus(8))], [job("a0", "a", gpus(8))]
        )
        sim.step()  # a0 runs from t=1000
        sim.now += 600
        sim.submit(job("a1", "a", gpus(8), created=sim.now))
        sim.step()  # a1 runs from t=1601
        sim.submit(job("b0", "b", gpus(8), created=sim.now))
        sim.rules.policy = replace(sim.rules.policy, reclaim_min_runtime=min_runtime)
        return sim

    assert [r.victim_uid for r in setup(0).step().reclaims] == ["a1"]  # the newest goes first
    # a1 has run under 300 s: the older a0 goes instead
    assert [r.victim_uid for r in setup(300).step().reclaims] == ["a0"]
    # both are protected: b0 waits
    result = setup(3600).step()
    assert result.reclaims == ()
    assert reason(result, "b0").startswith("no cluster fits gang")


def test_a_job_whose_priority_class_says_never_does_not_reclaim() -> None:
    """Volcano's reclaim skips a preemptor with PreemptionPolicy Never: it waits for free capacity."""
    sim = AdmissionRounds.of(
        [QueueSnap("a"), QueueSnap("b")], [cluster("c", 2, gpus(8))], jobs("a", "a", gpus(8), 2)
    )
    assert len(admitted(sim.step())) == 2
    sim.submit(replace(job("never", "b", gpus(8), created=1), preemption_policy="Never"))
    result = sim.step()
    assert result.reclaims == () and admitted(result) == {}
    sim.submit(job("lower", "b", gpus(8), created=2))
    assert [(r.victim_uid, r.for_uid) for r in sim.step().reclaims] == [("a01", "lower")]
