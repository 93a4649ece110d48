"""Fair share over time: the decay of usage, ordering by it, and the reclaim rate limit."""

from __future__ import annotations

import pytest

from tests.unit.admission.builders import GPU, admitted, cluster, gpus, jobs
from vglobal.admission import AdmissionPolicy, QueueSnap, RunningJob, Snapshot, admit
from vglobal.admission.share.usage import LN2, UsageLedger, accrue, decayed_allocation, dominant_share
from vglobal.sim.rounds import AdmissionRounds

H = 4 * 3600.0


def test_a_half_life_halves_usage() -> None:
    assert accrue({GPU: 8000.0}, {}, H, H) == pytest.approx({GPU: 4000.0})
    assert accrue({GPU: 8000.0}, {}, 2 * H, H) == pytest.approx({GPU: 2000.0})


def test_a_steady_allocation_settles_at_allocation_times_half_life_over_ln2() -> None:
    held = {GPU: 8000}
    one_half_life = accrue({}, held, H, H)
    assert one_half_life[GPU] == pytest.approx(8000 * H / LN2 / 2)  # half of the limit after H
    forever = accrue({}, held, 100 * H, H)
    assert decayed_allocation(forever, H)[GPU] == pytest.approx(8000)
    # over a short time the charge is allocation x time, as Volcano and Slurm charge it
    assert accrue({}, held, 1.0, H)[GPU] == pytest.approx(8000.0, rel=1e-4)


def test_charging_in_steps_equals_one_step() -> None:
    held = {"q": {GPU: 16000}}
    stepwise = UsageLedger(H)
    stepwise.advance(0.0, held)
    for t in range(60, 7201, 60):
        stepwise.advance(float(t), held)
    once = UsageLedger(H)
    once.advance(0.0, held)
    once.advance(7200.0, held)
    assert stepwise.of("q")[GPU] == pytest.approx(once.of("q")[GPU])


def test_a_clock_going_back_charges_and_decays_nothing() -> None:
    ledger = UsageLedger(H)
    ledger.resume({"q": {GPU: 1e6}}, at=10_000.0)
    ledger.advance(9_000.0, {"q": {GPU: 8000}})  # behind the stored time
    assert ledger.of("q") == {GPU: 1e6} and ledger.at == 10_000.0
    ledger.advance(10_000.0 + H, {})  # later than the stored time again: only that half-life counts
    assert ledger.of("q")[GPU] == pytest.approx(5e5)


def test_no_half_life_means_no_usage() -> None:
    ledger = UsageLedger(0.0)
    ledger.advance(0.0, {"q": {GPU: 8000}})
    ledger.advance(3600.0, {"q": {GPU: 8000}})
    assert ledger.of("q") == {} and decayed_allocation({GPU: 1.0}, 0.0) == {}


def test_dominant_share_is_decayed_allocation_over_deserved() -> None:
    usage = {GPU: 16000 * H / LN2, "cpu": 1000 * H / LN2}
    assert dominant_share(usage, {GPU: 32000, "cpu": 100_000}, H) == pytest.approx(0.5)


def _two_queues(a_usage: dict[str, float], half_life: float) -> Snapshot:
    return Snapshot(
        now=0.0,
        queues=(QueueSnap("a", usage=a_usage), QueueSnap("b")),
        clusters=(cluster("c", 8, gpus(8)),),
        pending=tuple(jobs("a", "a", gpus(8), 8) + jobs("b", "b", gpus(8), 8)),
        policy=AdmissionPolicy(fair_share_half_life=half_life),
    )


def test_decayed_usage_puts_the_queue_that_used_less_first_until_the_shares_meet() -> None:
    # a's usage decays to an allocation of 12 GPUs; both deserve 32
    usage = {GPU: 12000 * H / LN2}
    result = admit(_two_queues(usage, H))
    order = [uid[0] for uid in result.admitted_order]
    # b: 8/32, 16/32; then a at (12 + 8)/32 = 0.625 before b at 24/32, and so on
    assert order == ["b", "b", "a", "b", "a", "b", "a", "b"]
    assert result.queues["a"].usage_share == pytest.approx(12 / 32)
    # no half-life: the same usage is ignored, the queues alternate (a first by name)
    today = admit(_two_queues(usage, 0.0))
    assert [uid[0] for uid in today.admitted_order] == ["a", "b"] * 4
    assert today.queues["a"].usage == {} and today.queues["a"].usage_share == 0.0


def test_usage_rolls_up_the_tree_and_orders_the_parents() -> None:
    queues = (
        QueueSnap("p"),
        QueueSnap("p1", parent="p", usage={GPU: 24000 * H / LN2}),
        QueueSnap("p2", parent="p"),
        QueueSnap("r"),
    )
    snap = Snapshot(
        now=0.0,
        queues=queues,
        clusters=(cluster("c", 4, gpus(8)),),
        pending=tuple(jobs("x", "p2", gpus(8), 4) + jobs("y", "r", gpus(8), 4)),
        policy=AdmissionPolicy(fair_share_half_life=H),
    )
    result = admit(snap)
    # p carries its child p1's usage (24 of its 16 deserved): r's jobs go first, then p2's
    assert [uid[0] for uid in result.admitted_order] == ["y", "y", "y", "x"]
    assert result.queues["p"].usage == pytest.approx({GPU: 24000 * H / LN2})


def _reclaim_snapshot(limit: float, taken: int) -> Snapshot:
    node = cluster("c", 10, gpus(8))
    running = tuple(
        RunningJob(f"a{k}", "a", "c", 0, float(k), gpus(8), {f"c-n{k:02d}": gpus(8)}, running_since=0.0)
        for k in range(10)
    )
    free = tuple(n.__class__(n.name, gpus(0), n.allocatable) for n in node.nodes)
    return Snapshot(
        now=100.0,
        queues=(QueueSnap("a", allocated=gpus(80), reclaimed=gpus(8 * taken)), QueueSnap("b")),
        clusters=(node.__class__(node.name, node.labels, free),),
        pending=tuple(jobs("b", "b", gpus(8), 5)),
        running=running,
        policy=AdmissionPolicy(reclaim_limit=limit),
    )


def test_the_reclaim_rate_limit_takes_at_most_its_fraction_per_interval() -> None:
    # without a limit b takes its first victim at once (one plan per queue and cycle)
    assert len(admit(_reclaim_snapshot(0.0, 0)).reclaims) == 1
    # 20% of what a ran at the interval's start (80 + what was taken since): 2 jobs of 8 GPUs
    assert len(admit(_reclaim_snapshot(0.2, 0)).reclaims) == 1
    assert len(admit(_reclaim_snapshot(0.2, 1)).reclaims) == 1  # 8 of 0.2 x 88 = 17.6 taken
    assert admit(_reclaim_snapshot(0.2, 2)).reclaims == ()  # 16 taken: another 8 would pass 19.2
    assert admit(_reclaim_snapshot(0.05, 0)).reclaims == ()  # 4 GPUs: less than one job


def test_the_rate_limit_window_lets_reclaim_go_on_once_it_passes() -> None:
    sim = AdmissionRounds.of(
        [QueueSnap("a"), QueueSnap("b")],
        [cluster("c", 10, gpus(8))],
        jobs("a", "a", gpus(8), 10),
        now=0.0,
        reclaim_limit=0.2,
        reclaim_interval=600.0,
    )
    assert len(admitted(sim.step())) == 10
    sim.submit(*jobs("b", "b", gpus(8), 5))
    reclaimed: list[float] = []
    for t in range(10, 1800, 10):
        sim.now = float(t)
        result = sim.step(advance=0.0)
        reclaimed += [sim.now] * len(result.reclaims)
    # 20% of 80 GPUs: two jobs (one plan per cycle) at 10 s and 20 s. At 610 s the first has left
    # the window but 8 of 20% of (64 + 8) is still taken; at 620 s both have left: one job of 64;
    # at 1220 s one of 56 (20% of 48 + 8 is less than another job)
    assert reclaimed == [10.0, 20.0, 620.0, 1220.0]
