"""Order: queue priority, progressive filling by dominant share after the job, then job order."""

from __future__ import annotations

from tests.unit.admission.builders import GPU, admitted, cluster, gpus, job, jobs
from vglobal.admission import ClusterSnap, QueueSnap, Snapshot, admit
from vglobal.sim.rounds import AdmissionRounds


def test_three_to_one_weights_give_48_and_16_gpus_in_one_cycle() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a", weight=3), QueueSnap("b", weight=1)],
        [cluster("gpu", 8, gpus(8))],
        jobs("a", "a", gpus(8), 20) + jobs("b", "b", gpus(8), 20),
    )
    result = sim.step()
    assert sim.usage("a") == gpus(48) and sim.usage("b") == gpus(16)
    # progressive filling interleaves the queues instead of draining one first
    assert result.admitted_order == ("a00", "a01", "a02", "b00", "a03", "a04", "a05", "b01")
    assert result.queues["a"].allocated == gpus(48)


def test_an_admission_budget_spreads_the_same_admissions_over_cycles() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a", weight=3), QueueSnap("b", weight=1)],
        [cluster("gpu", 8, gpus(8))],
        jobs("a", "a", gpus(8), 20) + jobs("b", "b", gpus(8), 20),
        max_admissions=3,
    )
    orders = [sim.step().admitted_order for _ in range(4)]
    assert orders == [("a00", "a01", "a02"), ("b00", "a03", "a04"), ("a05", "b01"), ()]
    assert sim.usage("a") == gpus(48) and sim.usage("b") == gpus(16)
    first = sim.results[0]
    assert first.decisions["b00"] == first.decisions["a19"]
    assert first.decisions["b00"].reason == (  # type: ignore[union-attr]
        "waiting its turn: this cycle admitted 3 jobs, the most one cycle admits "
        "(--max-admissions-per-cycle); the rest are looked at next cycle"
    )
    assert first.queues["b"].pending == 20 and first.queues["a"].admitted == 3
    # Once the cluster is full, the waits say why again.
    assert "no cluster fits gang" in sim.results[3].decisions["b02"].reason  # type: ignore[union-attr]


def test_volcano_globals_round_robin_would_split_evenly_we_do_not() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a", weight=1), QueueSnap("b", weight=1)],
        [cluster("gpu", 8, gpus(8))],
        jobs("a", "a", gpus(8), 20) + jobs("b", "b", gpus(1), 200),
    )
    sim.step()
    # equal weights: both end at 32 GPUs whatever the job sizes
    assert sim.usage("a") == gpus(32) and sim.usage("b") == gpus(32)


def test_multi_round_share_converges_as_jobs_finish() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a", weight=3), QueueSnap("b", weight=1)],
        [cluster("gpu", 8, gpus(8))],
        jobs("a", "a", gpus(8), 20) + jobs("b", "b", gpus(8), 20),
    )
    rounds = []
    for _ in range(3):
        rounds.append(sorted(admitted(sim.step())))
        # a job of each queue finishes; the freed GPUs go back by share
        done = [sorted(u for u, r in sim.dispatcher.running.items() if r.queue == q)[0] for q in ("a", "b")]
        sim.finish(*done)
    assert rounds[1] == ["a06", "b02"] and rounds[2] == ["a07", "b03"]
    assert sim.usage("a") == gpus(40) and sim.usage("b") == gpus(8)


def test_higher_queue_priority_goes_first() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("low", weight=100), QueueSnap("high", priority=10)],
        [cluster("gpu", 2, gpus(8))],
        jobs("l", "low", gpus(8), 4) + jobs("h", "high", gpus(8), 4),
    )
    assert sorted(admitted(sim.step())) == ["h00", "h01"]


def test_hierarchy_compares_ancestors_below_the_common_ancestor() -> None:
    # org has two busy leaves, solo one: org as a whole gets half, not two thirds.
    queues = [
        QueueSnap("org"),
        QueueSnap("org-a", parent="org"),
        QueueSnap("org-b", parent="org"),
        QueueSnap("solo"),
    ]
    sim = AdmissionRounds.of(
        queues,
        [cluster("gpu", 8, gpus(8))],
        jobs("a", "org-a", gpus(8), 10) + jobs("b", "org-b", gpus(8), 10) + jobs("s", "solo", gpus(8), 10),
    )
    sim.step()
    assert sim.usage("solo") == gpus(32)
    assert sim.usage("org-a") == gpus(16) and sim.usage("org-b") == gpus(16)


def test_within_a_queue_priority_then_creation_then_uid() -> None:
    pending = [
        job("old-low", "q", gpus(8), created=1),
        job("new-high", "q", gpus(8), priority=100, created=50),
        job("b-same", "q", gpus(8), created=10),
        job("a-same", "q", gpus(8), created=10),
    ]
    result = admit(Snapshot(0, (QueueSnap("q"),), (cluster("c", 4, gpus(8)),), tuple(pending)))
    assert result.admitted_order == ("new-high", "old-low", "a-same", "b-same")


def test_dominant_share_counts_every_resource() -> None:
    # c's jobs are cpu-only: its share is its cpu share (16 of its deserved 48 cpu per job), g's its
    # GPU share (8 of 32): shares after the next job alternate .25 g, .33 c, .5 g, .67 c, .75 g, then
    # 1.0 vs 1.0 falls to the queue name.
    nodes = ClusterSnap("c1", {}, cluster("x", 4, gpus(8) + {"cpu": 64_000}).nodes)
    pending = jobs("g", "g", gpus(8) + {"cpu": 1000}, 4) + jobs("c", "c", gpus(0) + {"cpu": 16_000}, 3)
    result = admit(Snapshot(0, (QueueSnap("g"), QueueSnap("c")), (nodes,), tuple(pending)))
    assert result.admitted_order == ("g00", "c00", "g01", "c01", "g02", "c02", "g03")
    got = result.queues
    assert got["g"].allocated[GPU] == 32_000 and got["c"].allocated["cpu"] == 48_000
    assert got["g"].deserved == gpus(32) + {"cpu": 4_000}
