"""Invariants over random cycles (seeded): decisions settle.

Each seed builds a few queues (some of higher priority, memory-heavy or cpu-heavy jobs, gangs of
one to three pods, job priorities), fills the clusters, submits a late wave, then runs cycles with no
new input (admissions placed at once, victims stopped at once, as ``AdmissionRounds`` does):
(a) evictions stop within a bounded number of cycles;
(b) no job is taken twice for the same preemptor or reclaimer (unless that one was itself taken
    in between: a chain, not a loop);
(e) every victim taken is followed by the admission of the job it was taken for;
(c) at the end, no queue with pending work that fits its deserved share is at zero while another
    queue is above its deserved on a resource that work asks for.
"""

from __future__ import annotations

import random
from dataclasses import replace
from functools import cache

import pytest

from tests.unit.admission.builders import cluster, job, res
from vglobal.admission import AdmissionResult, PendingJob, QueueSnap
from vglobal.model.admission_policy import HUB_POLICY
from vglobal.sim.rounds import AdmissionRounds

CYCLES = 40
QUIET = 10  # the last cycles: no victim taken any more
CLAIM = 5.0  # seconds (cycles here) a claim stands
# Cycles within which a victim's job is admitted: its claim's time, and a few more once a claim
# lapses (the stand-in placer may put other jobs into the claimed room, an agent could too).
FOLLOW = int(CLAIM) + 4
SEEDS = range(64)


def _wave(rng: random.Random, queue: str, heavy: str, n: int, start: float, tag: str) -> list[PendingJob]:
    out = []
    for k in range(n):
        pod = (
            res(cpu=rng.choice([2, 3, 4]), mem_gi=rng.choice([1, 2]))
            if heavy == "cpu"
            else res(cpu=rng.choice([1, 2]), mem_gi=rng.choice([24, 40, 56]))
        )
        out.append(
            job(
                f"{queue}-{tag}{k:02d}",
                queue,
                pod,
                rng.randint(1, 3),
                priority=rng.choice([0, 0, 5]),
                created=start + k,
            )
        )
    return out


# The hub's default rule (worth), beside the core's own (Volcano's share rule).
HUB_RULE = {
    "reclaim_rule": HUB_POLICY.reclaim_rule,
    "reclaim_margin": HUB_POLICY.reclaim_margin,
    "reclaim_horizon": HUB_POLICY.reclaim_horizon,
    "protected_fraction": HUB_POLICY.protected_fraction,
}
RULES = {"share": {}, "hub": HUB_RULE}


@cache
def _run(seed: int, rule: str = "share") -> tuple[AdmissionRounds, list[AdmissionResult]]:
    rng = random.Random(seed)
    names = ["a", "b", "c"][: rng.randint(2, 3)]
    queues = [QueueSnap(q, priority=rng.choice([0, 0, 1]), weight=rng.randint(1, 3)) for q in names]
    if rule == "hub":  # some queues guaranteed a little: such a reclaim skips the worth rule
        queues = [
            replace(q, guarantee=res(cpu=rng.choice([4, 8]))) if rng.random() < 0.4 else q for q in queues
        ]
    heavy = {q: rng.choice(["cpu", "mem"]) for q in names}
    clusters = [
        cluster(f"c{i}", rng.randint(2, 4), res(cpu=16, mem_gi=128)) for i in range(rng.randint(1, 2))
    ]
    sim = AdmissionRounds.of(queues, clusters, now=0, claim_timeout=CLAIM, **RULES[rule])
    first = names[rng.randrange(len(names))]
    sim.submit(*_wave(rng, first, heavy[first], rng.randint(8, 16), 0, "x"))
    sim.step()
    sim.step()
    late = [q for q in names if q != first]
    for q in late:
        sim.submit(*_wave(rng, q, heavy[q], rng.randint(3, 8), sim.now, "y"))
    return sim, [sim.step() for _ in range(CYCLES)]


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("seed", SEEDS)
def test_reclaim_and_preemption_settle(seed: int, rule: str) -> None:
    _, results = _run(seed, rule)
    taken = [[(r.victim_uid, r.for_uid) for r in res_.reclaims] for res_ in results]
    for k, res_ in enumerate(results):
        taken[k] += [(e.job_uid, e.for_uid) for e in res_.evictions]
    # (a) evictions stop
    assert not any(taken[-QUIET:]), f"seed {seed}: still taking victims at the end: {taken[-QUIET:]}"
    # (b) never the same job twice for the same preemptor or reclaimer, unless that one was itself
    # taken in between (a higher-priority job of its queue took its place: it needs room again)
    first: dict[tuple[str, str], int] = {}
    for k, cycle in enumerate(taken):
        for pair in cycle:
            was = first.get(pair)
            if was is not None:
                between = {v for c in taken[was:k] for v, _ in c}
                assert pair[1] in between, f"seed {seed}: {pair[0]} taken again for {pair[1]} at cycle {k}"
            first[pair] = k
    # (e) the job a victim was taken for is admitted
    for k, cycle in enumerate(taken):
        for victim, for_uid in cycle:
            window = results[k : k + FOLLOW + 1]
            assert any(for_uid in r.admitted_order for r in window), (
                f"seed {seed}: {victim} taken at cycle {k} for {for_uid}, which was not admitted"
            )


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("seed", SEEDS)
def test_no_queue_with_fitting_work_stays_at_zero_while_another_is_above_deserved(
    seed: int, rule: str
) -> None:
    sim, results = _run(seed, rule)
    status = results[-1].queues
    d = sim.dispatcher
    for q, st in status.items():
        if q == "root" or any(st.allocated.values()):
            continue
        fitting = [
            f
            for uid, f in d.jobs.items()
            if f.queue == q and uid not in sim.placements and f.request.fits_in(st.deserved)
        ]
        asks = {r for f in fitting for r, v in f.request.items() if v}
        above = [
            (o, r)
            for o, other in status.items()
            if o not in (q, "root")
            for r in sorted(asks)
            if other.allocated.get(r, 0) > other.deserved.get(r, 0)
        ]
        assert not above, (
            f"seed {seed}: queue {q} at zero with {len(fitting)} fitting jobs; above deserved: {above}"
        )
