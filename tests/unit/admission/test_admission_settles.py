"""Invariants over random cycles (seeded): decisions settle.

Each seed builds a few queues (some of higher priority, memory-heavy or cpu-heavy jobs, gangs of
one to three pods, job priorities), fills the clusters, submits a late wave, then runs cycles with no
new input (admissions placed at once, victims stopped at once, as ``AdmissionRounds`` does):
(a) evictions stop within a bounded number of cycles;
(b) no job is taken twice for the same preemptor or reclaimer;
(e) every victim taken is followed by the admission of the job it was taken for.
"""

from __future__ import annotations

import random

import pytest

from tests.unit.admission.builders import cluster, job, res
from vglobal.admission import AdmissionResult, PendingJob, QueueSnap
from vglobal.sim.rounds import AdmissionRounds

CYCLES = 40
QUIET = 10  # the last cycles: no victim taken any more
CLAIM = 5.0  # seconds (cycles here) a claim stands
# Cycles within which a victim's job is admitted: its claim's time, and a few more once a claim
# lapses (the stand-in placer may put other jobs into the claimed room, an agent could too).
FOLLOW = int(CLAIM) + 4


def _wave(rng: random.Random, queue: str, heavy: str, n: int, start: float, tag: str) -> list[PendingJob]:
    out = []
    for k in range(n):
        pod = res(cpu=rng.choice([2, 3, 4]), mem_gi=rng.choice([1, 2])) if heavy == "cpu" else res(
            cpu=rng.choice([1, 2]), mem_gi=rng.choice([24, 40, 56])
        )
        out.append(
            job(f"{queue}-{tag}{k:02d}", queue, pod, rng.randint(1, 3), priority=rng.choice([0, 0, 5]), created=start + k)
        )
    return out


def _run(seed: int) -> list[AdmissionResult]:
    rng = random.Random(seed)
    names = ["a", "b", "c"][: rng.randint(2, 3)]
    queues = [QueueSnap(q, priority=rng.choice([0, 0, 1]), weight=rng.randint(1, 3)) for q in names]
    heavy = {q: rng.choice(["cpu", "mem"]) for q in names}
    clusters = [cluster(f"c{i}", rng.randint(2, 4), res(cpu=16, mem_gi=128)) for i in range(rng.randint(1, 2))]
    sim = AdmissionRounds.of(queues, clusters, now=0, claim_timeout=CLAIM)
    first = names[rng.randrange(len(names))]
    sim.submit(*_wave(rng, first, heavy[first], rng.randint(8, 16), 0, "x"))
    sim.step()
    sim.step()
    late = [q for q in names if q != first]
    for q in late:
        sim.submit(*_wave(rng, q, heavy[q], rng.randint(3, 8), sim.now, "y"))
    return [sim.step() for _ in range(CYCLES)]


@pytest.mark.parametrize("seed", range(64))
def test_reclaim_and_preemption_settle(seed: int) -> None:
    results = _run(seed)
    taken = [[(r.victim_uid, r.for_uid) for r in res_.reclaims] for res_ in results]
    for k, res_ in enumerate(results):
        taken[k] += [(e.job_uid, e.for_uid) for e in res_.evictions]
    # (a) evictions stop
    assert not any(taken[-QUIET:]), f"seed {seed}: still taking victims at the end: {taken[-QUIET:]}"
    # (b) never the same job twice for the same preemptor or reclaimer
    pairs = [p for cycle in taken for p in cycle]
    assert len(pairs) == len(set(pairs)), f"seed {seed}: taken again: {sorted(pairs)}"
    # (e) the job a victim was taken for is admitted
    for k, cycle in enumerate(taken):
        for victim, for_uid in cycle:
            window = results[k : k + FOLLOW + 1]
            assert any(for_uid in r.admitted_order for r in window), (
                f"seed {seed}: {victim} taken at cycle {k} for {for_uid}, which was not admitted"
            )
