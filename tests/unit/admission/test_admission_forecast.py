"""Predicted starts: admit() replayed forward on a virtual clock (admission/forecast.py)."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.admission.builders import admitted, cluster, gpus, job
from vglobal.admission import QueueSnap, RunningJob, Snapshot, admit
from vglobal.admission.forecast import forecast

NOW = 10_000.0


def _running(uid: str, queue: str, node: str, n: int, cluster_name: str = "c") -> RunningJob:
    return RunningJob(
        uid=uid, queue=queue, cluster=cluster_name, priority=0, created=0.0, request=gpus(n),
        placements={node: gpus(n)}, running_since=NOW - 100, pinned=True, name=uid, namespace="ns",
    )


def _snap(pending: list, running: list, queues: tuple[QueueSnap, ...] = (QueueSnap("q"),), nodes: int = 1) -> Snapshot:
    c = cluster("c", nodes, gpus(8))
    used: dict[str, object] = {}
    for r in running:
        for node, vec in r.placements.items():
            used[node] = used.get(node, gpus(0)) + vec  # type: ignore[operator]
    c = type(c)(c.name, c.labels, tuple(type(n)(n.name, n.free - used.get(n.name, gpus(0)), n.allocatable) for n in c.nodes))  # type: ignore[operator]
    # the hub's queues carry what their admitted jobs hold
    held = {q.name: sum((r.request for r in running if r.queue == q.name), gpus(0)) for q in queues}
    queues = tuple(replace(q, allocated=held[q.name]) for q in queues)
    return Snapshot(now=NOW, queues=queues, clusters=(c,), pending=tuple(pending), running=tuple(running))


def test_jobs_start_as_the_running_ones_end_in_queue_order() -> None:
    snap = _snap(
        [job("b", "q", gpus(8), created=1.0), job("c", "q", gpus(8), created=2.0)],
        [_running("a", "q", "c-n00", 8)],
    )
    out = forecast(snap, {"a": NOW + 600}, {"b": 300, "c": 300}).estimates
    assert (out["b"].start, out["b"].cluster, out["b"].ahead) == (NOW + 600, "c", 0)
    assert (out["c"].start, out["c"].ahead) == (NOW + 900, 1)


def test_a_job_that_fits_now_starts_now_and_an_endless_run_leaves_the_rest_unknown() -> None:
    snap = _snap([job("fits", "q", gpus(4), created=1.0), job("big", "q", gpus(8), created=2.0)], [_running("a", "q", "c-n00", 4)])
    out = forecast(snap, {}, {"fits": 60}).estimates
    assert out["fits"].start == NOW
    assert out["big"].start is None and out["big"].ahead == 1  # a never ends: nothing says when


def test_freed_room_goes_by_fair_share_as_the_hub_hands_it_out() -> None:
    queues = (QueueSnap("a", weight=1), QueueSnap("b", weight=1))
    pending = [job(f"a{i}", "a", gpus(4), created=float(i)) for i in range(3)] + [job("b0", "b", gpus(4), created=9.0)]
    snap = _snap(pending, [_running("r", "a", "c-n00", 8)], queues)
    out = forecast(snap, {"r": NOW + 100}, {u.uid: 1000 for u in pending}).estimates
    # queue b has nothing running: its job goes into the first freed room, beside a's first
    assert out["b0"].start == NOW + 100 and out["a0"].start == NOW + 100
    assert out["a1"].start == NOW + 1100 and out["a1"].ahead == 1


def test_close_ends_are_one_step_so_a_short_replay_reaches_far_and_is_late_by_a_tenth_at_most() -> None:
    # eight 1-GPU runs end a second apart from 1,000 s on: the 8-GPU job needs them all gone
    running = [_running(f"r{i}", "q", "c-n00", 1) for i in range(8)]
    snap = _snap([job("big", "q", gpus(8), created=1.0)], running)
    ends = {f"r{i}": NOW + 1000 + i for i in range(8)}
    exact = forecast(snap, ends, {"big": 60}, coalesce=0.0)
    stepped = forecast(snap, ends, {"big": 60}, max_cycles=3)
    assert exact.estimates["big"].start == NOW + 1007 and exact.cycles == 9
    start = stepped.estimates["big"].start
    assert start is not None and NOW + 1007 <= start <= NOW + 1.1 * 1007 and stepped.cycles <= 3


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_the_forecast_agrees_with_the_cycle_of_now_and_never_goes_back_in_time(seed: int) -> None:
    rng = random.Random(seed)
    queues = tuple(QueueSnap(q, weight=rng.randint(1, 3)) for q in ("a", "b", "c")[: rng.randint(1, 3)])
    nodes = rng.randint(1, 3)
    running, ends = [], {}
    for i in range(nodes):
        n = rng.choice([0, 4, 8])
        if n:
            uid = f"r{i}"
            running.append(_running(uid, rng.choice(queues).name, f"c-n{i:02d}", n))
            if rng.random() < 0.8:
                ends[uid] = NOW + rng.randint(1, 5000)
    pending = [
        job(f"p{k}", rng.choice(queues).name, gpus(rng.choice([1, 2, 4, 8])), rng.randint(1, 2), created=float(k), priority=rng.choice([0, 0, 3]))
        for k in range(rng.randint(1, 10))
    ]
    snap = _snap(pending, running, queues, nodes)
    durations = {p.uid: float(rng.randint(1, 3000)) for p in pending if rng.random() < 0.9}
    fc = forecast(snap, ends, durations)
    now_admitted = admitted(admit(snap))
    for uid, cluster_name in now_admitted.items():
        assert fc.estimates[uid].start == NOW and fc.estimates[uid].cluster == cluster_name
    for uid, est in fc.estimates.items():
        assert uid in now_admitted or est.start is None or est.start > NOW
        assert est.start is None or est.start <= NOW + 7 * 86400
    assert fc.estimates == forecast(snap, ends, durations).estimates  # deterministic
