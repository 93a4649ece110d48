"""Invariants of admission over random cycles (seeded generator, the simulator's dispatcher over
first-fit nodes): several queues, some with a capability, jobs of cpu and memory with gangs of a
few pods and priorities, queues arriving late, reclaim on.

(c) no queue with pending work that fits its deserved share stays at zero while another queue is
    above its deserved on a resource that work asks for;
(d) no queue's allocation exceeds its capability, counting every placed pod.
"""

from __future__ import annotations

import random

import pytest

from tests.unit.admission.builders import cluster, job, res
from vglobal.admission import QueueSnap
from vglobal.model.resources import ResourceVector
from vglobal.sim.rounds import AdmissionRounds

SEEDS = range(40)
CYCLES = 14


def _system(seed: int) -> tuple[AdmissionRounds, dict[str, ResourceVector | None], list[object]]:
    rnd = random.Random(seed)
    clusters = [
        cluster(f"c{k}", rnd.randint(2, 3), res(cpu=rnd.choice([8, 16]), mem_gi=rnd.choice([32, 64])))
        for k in range(rnd.randint(1, 2))
    ]
    caps: dict[str, ResourceVector | None] = {}
    queues = []
    for k in range(3):
        name = f"q{k}"
        cap = res(cpu=rnd.randint(6, 20)) if rnd.random() < 0.4 else None
        caps[name] = cap
        queues.append(QueueSnap(name, weight=rnd.randint(1, 2), capability=cap))
    sim = AdmissionRounds.of(queues, clusters, reclaim_after=0.0)
    late = []
    n = 0
    for k, q in enumerate(caps):
        for _ in range(rnd.randint(10, 30)):
            pod = res(cpu=rnd.choice([1, 1, 2]), mem_gi=rnd.choice([1, 2, 4, 8]))
            j = job(f"{q}-{n:03d}", q, pod, rnd.choice([1, 1, 2, 3]), priority=rnd.randint(0, 2), created=float(n))
            n += 1
            if k == 2:
                late.append(j)  # the last queue arrives once the others hold the clusters
            else:
                sim.submit(j)
    return sim, caps, late


def _placed(sim: AdmissionRounds) -> dict[str, ResourceVector]:
    """Per queue, what its placed pods hold (the placer's view, not admission's accounting)."""
    out: dict[str, ResourceVector] = {}
    d = sim.dispatcher
    for uid, pods in sim.placements.items():
        facts = d.jobs[uid]
        held = out.get(facts.queue, ResourceVector())
        for i, _node in pods:
            held = held + facts.gang[i][0]
        out[facts.queue] = held
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_capability_holds_every_placed_pod(seed: int) -> None:
    sim, caps, late = _system(seed)
    for cycle in range(CYCLES):
        if cycle == 2:
            sim.submit(*late)  # type: ignore[arg-type]
        sim.step()
        for q, held in _placed(sim).items():
            cap = caps[q]
            if cap is not None:
                assert held.get("cpu", 0) <= cap["cpu"], (seed, cycle, q, held, cap)


@pytest.mark.parametrize("seed", SEEDS)
def test_no_queue_with_fitting_work_stays_at_zero_while_another_is_above_deserved(seed: int) -> None:
    sim, _caps, late = _system(seed)
    for cycle in range(CYCLES):
        if cycle == 2:
            sim.submit(*late)  # type: ignore[arg-type]
        result = sim.step()
    status = result.queues
    d = sim.dispatcher
    for q, st in status.items():
        if q == "root" or any(st.allocated.values()):
            continue
        room = st.deserved
        fitting = [
            f for uid, f in d.jobs.items() if f.queue == q and uid not in sim.placements and f.request.fits_in(room)
        ]
        if not fitting:
            continue
        asks = {r for f in fitting for r, v in f.request.items() if v}
        above = [
            (o, r)
            for o, other in status.items()
            if o not in (q, "root") and not any(c.startswith(o + "/") for c in status)
            for r in asks
            if other.allocated.get(r, 0) > other.deserved.get(r, 0)
        ]
        assert not above, (seed, q, "at zero with", len(fitting), "fitting jobs; above deserved:", above)
