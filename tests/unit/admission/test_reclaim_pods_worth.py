"""The worth rule (victims/worth.py) in surplus-pod reclaim (victims/reclaim_pods.py): pods beyond a
gang go cheapest first, only while their lost work (since their job's checkpoint) is worth the
reclaimer's gain, never from a protected queue nor from a run admitted while the reclaimer waited."""

from __future__ import annotations

from tests.unit.admission.builders import admitted, cluster, gpus, job
from vglobal.admission import AdmissionPolicy, QueueSnap, RunningJob, RunningPod, Snapshot, admit

NOW = 100_000.0


def _elastic(uid: str, node: str, started: float, checkpointed: float | None = None) -> RunningJob:
    """Two pods of 4 GPUs on one node: its gang's (minAvailable 1, a task never preempted, so the
    job never goes whole) and a surplus one."""
    return RunningJob(
        uid=uid,
        queue="over",
        cluster="c",
        priority=0,
        created=started,
        request=gpus(8),
        placements={node: gpus(8)},
        running_since=started,
        pods=(RunningPod(f"{uid}-0", node, gpus(4), preemptable=False), RunningPod(f"{uid}-1", node, gpus(4))),
        min_available=1,
        holds_pinned=True,
        checkpointed=checkpointed,
    )


# "cheap" ran longest but saved its work 300 s ago; "dear" is newer and never saved: a pod of
# "cheap" (4 of 16 GPUs) loses 300 s x 0.25 = 75, one of "dear" 3000 s x 0.25 = 750.
RUNNING = (
    _elastic("cheap", "c-n00", NOW - 5000, checkpointed=NOW - 300),
    _elastic("dear", "c-n01", NOW - 3000),
)


def _snapshot(running: tuple[RunningJob, ...] = RUNNING, **policy: object) -> Snapshot:
    """Queue "over" holds the two full 8-GPU nodes (twice its 8 deserved); "under" waits with one
    pod of 4 GPUs: its gain is a quarter of the capacity for the horizon (900 at 3600 s)."""
    c = cluster("c", 2, gpus(8))
    full = tuple(n.__class__(n.name, gpus(0), n.allocatable) for n in c.nodes)
    return Snapshot(
        now=NOW,
        queues=(QueueSnap("over", deserved=gpus(8), allocated=gpus(16)), QueueSnap("under", deserved=gpus(8))),
        clusters=(c.__class__(c.name, c.labels, full),),
        pending=(job("r", "under", gpus(4), created=NOW - 60, waiting_since=NOW - 60),),
        running=running,
        policy=AdmissionPolicy(**policy),  # type: ignore[arg-type]
    )


def _evicted(snap: Snapshot) -> list[str]:
    result = admit(snap)
    assert not result.reclaims  # surplus pods suffice: no job goes whole
    return sorted(p for e in result.evictions for p in e.pods)


def test_the_surplus_pod_that_loses_least_goes_first() -> None:
    assert _evicted(_snapshot()) == ["dear-1"]  # Volcano's rule: the newest job's newest pod
    assert _evicted(_snapshot(reclaim_rule="worth")) == ["cheap-1"]  # 75 lost, not 750


def test_no_surplus_pod_goes_when_its_lost_work_outweighs_the_gain() -> None:
    # a horizon of 299 s makes the gain 74.75: even the checkpointed pod's 75 is too dear
    snap = _snapshot(reclaim_rule="worth", reclaim_horizon=299.0)
    assert _evicted(snap) == []
    assert admitted(admit(snap)) == {}
    # without the checkpoint the same pod would lose its whole run: not worth it at 3600 s
    uncheckpointed = (_elastic("cheap", "c-n00", NOW - 5000), _elastic("dear", "c-n01", NOW - 4000))
    assert _evicted(_snapshot(uncheckpointed, reclaim_rule="worth")) == []


def test_a_protected_queue_gives_no_surplus_pods() -> None:
    # "over" holds twice its deserved: protected only from a fraction above that
    assert _evicted(_snapshot(reclaim_rule="worth", protected_fraction=1.9)) == ["cheap-1"]
    assert _evicted(_snapshot(reclaim_rule="worth", protected_fraction=2.1)) == []


def test_a_run_admitted_while_the_reclaimer_waited_gives_no_pods() -> None:
    late = (_elastic("cheap", "c-n00", NOW - 30, checkpointed=NOW - 10), RUNNING[1])
    assert _evicted(_snapshot(late, reclaim_rule="worth")) == ["dear-1"]
