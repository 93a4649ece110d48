"""The "worth" reclaim rule (victims/worth.py): lost work since the last checkpoint, protection
below a fraction of the fair share, hysteresis, cheapest victims first; and per-queue half-life."""

from __future__ import annotations

import dataclasses
import random

import pytest

from tests.unit.admission.builders import cluster, gpus, job, res
from tests.unit.admission.test_admission_settles import CYCLES, _wave
from vglobal.admission import AdmissionPolicy, QueueSnap, RunningJob, Snapshot, admit
from vglobal.admission.share.usage import LN2, UsageLedger
from vglobal.admission.victims.worth import lost_seconds
from vglobal.sim.rounds import AdmissionRounds

NOW = 100_000.0


def _run(uid: str, started: float, node: int, **kw: object) -> RunningJob:
    return RunningJob(
        uid, "a", "c", 0, started, gpus(8), {f"c-n{node:02d}": gpus(8)}, running_since=started, **kw  # type: ignore[arg-type]
    )


def test_a_stop_loses_the_run_since_the_last_checkpoint() -> None:
    assert lost_seconds(_run("x", NOW - 7200, 0), NOW) == 7200
    assert lost_seconds(_run("x", NOW - 7200, 0, checkpointed=NOW - 600), NOW) == 600
    assert lost_seconds(_run("x", NOW - 5000, 0, checkpoint_interval=1800.0), NOW) == 1400
    # a checkpoint reported before this run began (a previous run's) does not count
    assert lost_seconds(_run("x", NOW - 5000, 0, checkpointed=NOW - 9000), NOW) == 5000


def _snapshot(
    running: tuple[RunningJob, ...], b: QueueSnap | None = None, ask: int = 8, **policy: object
) -> Snapshot:
    """A holds the cluster's four 8-GPU nodes (32 GPUs); B waits with one job of `ask` GPUs (8: B
    deserves 8, A 24: A is a third above its share, B at zero)."""
    c = cluster("c", 4, gpus(8))
    full = tuple(n.__class__(n.name, gpus(0), n.allocatable) for n in c.nodes)
    return Snapshot(
        now=NOW,
        queues=(QueueSnap("a", allocated=gpus(32)), b or QueueSnap("b")),
        clusters=(c.__class__(c.name, c.labels, full),),
        pending=(job("b0", "b", gpus(ask), created=NOW - 60),),
        running=running,
        policy=AdmissionPolicy(**policy),  # type: ignore[arg-type]
    )


def _victims(snap: Snapshot) -> list[str]:
    return [r.victim_uid for r in admit(snap).reclaims]


CHEAP = (
    _run("a0", NOW - 7200, 0, checkpointed=NOW - 600),  # loses 600 s
    _run("a1", NOW - 3000, 1),  # the newest: loses 3000 s
    _run("a2", NOW - 5000, 2, checkpoint_interval=1800.0),  # loses 1400 s
    _run("a3", NOW - 10_000, 3),  # loses 10000 s
)


def test_a_checkpointed_victim_goes_first_and_loses_only_the_time_since_its_checkpoint() -> None:
    assert _victims(_snapshot(CHEAP)) == ["a1"]  # today's rule: the newest
    assert _victims(_snapshot(CHEAP, reclaim_rule="worth")) == ["a0"]


def test_a_victim_whose_lost_work_outweighs_the_gain_is_not_taken() -> None:
    """B gains 8 of 32 GPUs for the horizon (3600 s): a quarter of the capacity for an hour. A
    victim of the same size may lose at most an hour; none here loses less than 3000 s."""
    dear = (_run("a1", NOW - 3000, 1), _run("a3", NOW - 10_000, 3))
    assert _victims(_snapshot(dear, reclaim_rule="worth")) == ["a1"]
    assert _victims(_snapshot(dear, reclaim_rule="worth", reclaim_horizon=2999.0)) == []


def test_a_queue_below_its_protected_fraction_is_never_a_victim() -> None:
    # A holds 32 of its 24 deserved (1.33): a victim up to a protected fraction of 1.33
    assert _victims(_snapshot(CHEAP, reclaim_rule="worth", protected_fraction=1.3)) == ["a0"]
    assert _victims(_snapshot(CHEAP, reclaim_rule="worth", protected_fraction=1.4)) == []
    # within the margin of its share: left alone too
    assert _victims(_snapshot(CHEAP, reclaim_rule="worth", reclaim_margin=0.4)) == []


def test_protection_is_judged_on_the_decayed_share_that_orders_admission() -> None:
    """With a half-life, A's decayed usage (it only just started) is far below its share: A is
    protected, though it holds a third more than its share now. Today's rule takes from it."""
    h = 4 * 3600.0
    assert _victims(_snapshot(CHEAP, fair_share_half_life=h)) == ["a1"]
    assert _victims(_snapshot(CHEAP, fair_share_half_life=h, reclaim_rule="worth")) == []


# The hub's defaults: the worth rule judged on usage decayed with a 15-minute half-life.
DEFAULTS = {
    "reclaim_rule": "worth",
    "reclaim_margin": 0.05,
    "reclaim_horizon": 14_400.0,
    "fair_share_half_life": 900.0,
}


def test_a_queue_below_its_guarantee_reclaims_at_once_whatever_worth_and_decay_say() -> None:
    """A only just started, so its decayed share is far below its deserved: the worth rule
    protects it, and B's job alone waits. With a guarantee of 8 GPUs, B's 8-GPU job reclaims at
    once (Volcano's rule, victims in the worth rule's order: the cheapest)."""
    assert _victims(_snapshot(CHEAP, **DEFAULTS)) == []
    assert _victims(_snapshot(CHEAP, QueueSnap("b", guarantee=gpus(8)), **DEFAULTS)) == ["a0"]
    # the lost work does not count within the guarantee either (a horizon that pays for nothing)
    no_gain = {**DEFAULTS, "reclaim_horizon": 0.0, "fair_share_half_life": 0.0}
    assert _victims(_snapshot(CHEAP, **no_gain)) == []
    assert _victims(_snapshot(CHEAP, QueueSnap("b", guarantee=gpus(8)), **no_gain)) == ["a0"]


def test_reclaim_beyond_the_guarantee_is_judged_by_worth_and_decay() -> None:
    """B's guarantee of 4 GPUs does not cover its 8-GPU job: the default rule judges it, and A is
    protected by its decayed share. A 4-GPU job is within it."""
    assert _victims(_snapshot(CHEAP, QueueSnap("b", guarantee=gpus(4)), **DEFAULTS)) == []
    assert _victims(_snapshot(CHEAP, QueueSnap("b", guarantee=gpus(4)), ask=4, **DEFAULTS)) == ["a0"]


def test_a_head_beyond_the_guarantee_does_not_keep_a_smaller_job_within_it_waiting() -> None:
    """B's 8-GPU head is judged by worth and decay and finds no victim; its 4-GPU job behind it,
    within the guarantee, still reclaims in the same cycle. A later job no smaller than the head
    on every resource does not try: it would fail as the head did."""
    snap = _snapshot(CHEAP, QueueSnap("b", guarantee=gpus(4)), **DEFAULTS)
    small = job("b1", "b", gpus(4), created=NOW - 30)
    result = admit(dataclasses.replace(snap, pending=(*snap.pending, small)))
    assert [(r.victim_uid, r.for_uid) for r in result.reclaims] == [("a0", "b1")]
    as_big = job("b1", "b", gpus(8), created=NOW - 30)
    assert _victims(dataclasses.replace(snap, pending=(*snap.pending, as_big))) == []


def test_a_victim_queue_keeps_its_own_guarantee_when_another_reclaims_within_its() -> None:
    """B reclaims 4 GPUs within its guarantee; A holds 32 and loses an 8-GPU job only if it keeps
    its own guarantee without it."""
    b = QueueSnap("b", guarantee=gpus(4))
    for guaranteed, victims in ((24, ["a0"]), (28, [])):
        snap = _snapshot(CHEAP, b, ask=4, **DEFAULTS)
        a = QueueSnap("a", allocated=gpus(32), guarantee=gpus(guaranteed))
        assert _victims(dataclasses.replace(snap, queues=(a, b))) == victims


def test_a_queue_half_life_of_its_own_decays_its_usage_and_orders_it() -> None:
    ledger = UsageLedger(3600.0, half_lives={"fast": 600.0})
    ledger.advance(0.0, {})
    ledger.advance(6000.0, {"fast": {"g": 1000}, "slow": {"g": 1000}})  # both held 1000 for 6000 s
    fast, slow = ledger.of("fast")["g"], ledger.of("slow")["g"]
    assert fast == pytest.approx(1000 * 600 / LN2 * (1 - 2**-10))
    assert slow == pytest.approx(1000 * 3600 / LN2 * (1 - 2 ** (-6000 / 3600)))
    # ordering: the same usage read with a queue's own (shorter) half-life is a larger decayed
    # allocation, so that queue goes second
    usage = {"nvidia.com/gpu": 8000 * 3600 / LN2}
    c = cluster("c", 2, gpus(8))
    snap = Snapshot(
        now=0.0,
        queues=(QueueSnap("p", usage=usage, half_life=600.0), QueueSnap("q", usage=usage)),
        clusters=(c,),
        pending=(job("p0", "p", gpus(8)), job("q0", "q", gpus(8)), job("q1", "q", gpus(8), created=1.0)),
        policy=AdmissionPolicy(fair_share_half_life=3600.0, max_admissions=0),
    )
    assert admit(snap).admitted_order == ("q0", "q1")


def _random_run(seed: int, **policy: object) -> list[tuple[set[str], set[str], set[str]]]:
    """Seeded cycles over test_admission_settles' waves, with jobs finishing at random: per cycle,
    the jobs submitted before it, those it admitted, and the victims it took for jobs that were
    already submitted before the cycle before (a reclaim for a newer job answers new input)."""
    rng = random.Random(seed)
    names = ["a", "b", "c"][: rng.randint(2, 3)]
    queues = [QueueSnap(q, weight=rng.randint(1, 3)) for q in names]
    heavy = {q: rng.choice(["cpu", "mem"]) for q in names}
    clusters = [
        cluster(f"c{i}", rng.randint(2, 4), res(cpu=16, mem_gi=128)) for i in range(rng.randint(1, 2))
    ]
    sim = AdmissionRounds.of(queues, clusters, now=0, **policy)
    out: list[tuple[set[str], set[str], set[str]]] = []
    known: set[str] = set()
    for k in range(CYCLES):
        before = set(known)
        if k % 6 == 0:
            q = names[rng.randrange(len(names))]
            wave = _wave(rng, q, heavy[q], rng.randint(2, 8), sim.now, f"w{k}-")
            sim.submit(*wave)
            known |= {j.uid for j in wave}
        running = sorted(sim.dispatcher.running)
        if running and rng.random() < 0.5:
            sim.finish(rng.choice(running))
        result = sim.step()
        earlier = out[-1][0] if out else set()
        # reclaim only: a higher-priority job of the victim's own queue preempts it (priority rules)
        taken = {r.victim_uid for r in result.reclaims if r.for_uid in earlier and not r.preempted}
        taken |= {e.job_uid for e in result.evictions if e.for_uid in earlier and e.reclaimed}
        out.append((before | known, set(result.admitted_order), taken))
    return out


@pytest.mark.parametrize("seed", range(16))
def test_reclaim_never_takes_back_what_the_cycle_before_admitted(seed: int) -> None:
    """A job admitted in one cycle is no victim in the next for a job that waited through both
    (with the "share" rule, seeds 8, 12 and 15 take such a job back)."""
    cycles = _random_run(seed, reclaim_rule="worth", fair_share_half_life=600.0, reclaim_after=0.0)
    for k in range(1, len(cycles)):
        undone = cycles[k - 1][1] & cycles[k][2]
        assert not undone, f"seed {seed}: cycle {k} reclaims {sorted(undone)} admitted in cycle {k - 1}"
