"""Node groups in the victim planners: a job whose queue is confined to some node groups preempts
and reclaims only pods on nodes of those groups, however the victim order ranks the others
(Volcano's preempt and reclaim run the nodegroup predicate on the node they free)."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, gpus, job, reason
from vglobal.admission import (
    ClusterSnap,
    NodeSnap,
    QueueSnap,
    RunningJob,
    RunningPod,
    Snapshot,
    admit,
)
from vglobal.model.queue_affinity import NODE_GROUP_LABEL, QueueAffinity
from vglobal.model.resources import ResourceVector

G2 = QueueAffinity(required=("g2",))
LOW, HIGH = 1, 100


def _cluster(groups: dict[str, str | None], used: dict[str, float]) -> ClusterSnap:
    """Nodes of 8 GPUs each, ``used`` of them taken."""
    nodes = tuple(
        NodeSnap(n, gpus(8 - used.get(n, 0)), gpus(8), {NODE_GROUP_LABEL: g} if g else {})
        for n, g in groups.items()
    )
    return ClusterSnap("c", {}, nodes)


def _run(
    uid: str, queue: str, pods: dict[str, str], *, size: float = 4, created: float = 0, min_available: int = 0
) -> RunningJob:
    """A running job with a pod of ``size`` GPUs per entry of ``pods`` (pod name -> node)."""
    per_node: dict[str, ResourceVector] = {}
    for node in pods.values():
        per_node[node] = per_node.get(node, ResourceVector()) + gpus(size)
    return RunningJob(
        uid=uid,
        queue=queue,
        cluster="c",
        priority=LOW,
        created=created,
        request=gpus(size * len(pods)),
        placements=per_node,
        running_since=0.0,
        pods=tuple(RunningPod(name, node, gpus(size)) for name, node in pods.items()),
        min_available=min_available,
    )


NODES = {"a-g1": "g1", "b-g2": "g2"}
FULL = {"a-g1": 8, "b-g2": 8}


def _evicted(result: object) -> set[str]:
    return {p for e in result.evictions for p in e.pods}  # type: ignore[attr-defined]


def test_preemption_frees_room_only_on_the_queues_node_groups() -> None:
    # The newest victim (on g1) comes first in victim order; the job may only use g2.
    running = (
        _run("old", "q", {"old-0": "b-g2", "old-1": "b-g2"}, created=1),
        _run("new", "q", {"new-0": "a-g1", "new-1": "a-g1"}, created=2),
    )
    preemptor = job("hi", "q", gpus(4), priority=HIGH, created=10)
    result = admit(
        Snapshot(100.0, (QueueSnap("q", affinity=G2),), (_cluster(NODES, FULL),), (preemptor,), running)
    )
    assert admitted(result) == {"hi": "c"}
    assert _evicted(result) == {"old-1"}  # the newest pod of the g2 victim, nothing on g1


def test_preemption_without_victims_on_the_groups_waits_naming_them() -> None:
    running = (_run("new", "q", {"new-0": "a-g1", "new-1": "a-g1"}, created=2),)
    # b-g2 is taken by a job of the same priority: not a victim
    same = _run("peer", "q", {"peer-0": "b-g2", "peer-1": "b-g2"})
    running += (replace(same, priority=HIGH),)
    preemptor = job("hi", "q", gpus(4), priority=HIGH, created=10)
    result = admit(
        Snapshot(100.0, (QueueSnap("q", affinity=G2),), (_cluster(NODES, FULL),), (preemptor,), running)
    )
    assert admitted(result) == {}
    assert not result.evictions and not result.reclaims
    assert "queue q allows node groups g2" in reason(result, "hi")


def test_pod_reclaim_takes_surplus_pods_only_on_the_groups() -> None:
    # Queue "over" runs 4 pods (16 GPUs) of an elastic job over its deserved; "under" may use g2.
    queues = (
        QueueSnap("under", deserved=gpus(8), affinity=G2),
        QueueSnap("over", deserved=gpus(8), allocated=gpus(16)),
    )
    pods = {"e-0": "b-g2", "e-1": "b-g2", "e-2": "a-g1", "e-3": "a-g1"}
    running = (_run("elastic", "over", pods, min_available=1),)
    result = admit(Snapshot(100.0, queues, (_cluster(NODES, FULL),), (job("r", "under", gpus(4)),), running))
    assert admitted(result) == {"r": "c"}
    # victim order is newest pod first (e-3 on g1): only the g2 pods count
    assert _evicted(result) == {"e-1"}


def test_whole_job_reclaim_takes_victims_only_on_the_groups() -> None:
    queues = (
        QueueSnap("under", deserved=gpus(8), affinity=G2),
        QueueSnap("over", deserved=gpus(8), allocated=gpus(16)),
    )
    running = (
        _run("on-g2", "over", {"x-0": "b-g2", "x-1": "b-g2"}, created=1, min_available=2),
        _run("on-g1", "over", {"y-0": "a-g1", "y-1": "a-g1"}, created=2, min_available=2),
    )
    result = admit(Snapshot(100.0, queues, (_cluster(NODES, FULL),), (job("r", "under", gpus(8)),), running))
    assert [r.victim_uid for r in result.reclaims] == ["on-g2"]  # not the newer job on g1
    assert not result.evictions


def test_reclaim_with_victims_only_off_the_groups_waits() -> None:
    queues = (
        QueueSnap("under", deserved=gpus(8), affinity=G2),
        QueueSnap("over", deserved=gpus(8), allocated=gpus(16)),
        QueueSnap("held", deserved=gpus(8), allocated=gpus(8), reclaimable=False),
    )
    running = (
        _run("on-g1", "over", {"y-0": "a-g1", "y-1": "a-g1"}, created=2, min_available=1),
        _run("pinned", "held", {"z-0": "b-g2", "z-1": "b-g2"}, created=1, min_available=1),
    )
    result = admit(Snapshot(100.0, queues, (_cluster(NODES, FULL),), (job("r", "under", gpus(4)),), running))
    assert admitted(result) == {}
    assert not result.evictions and not result.reclaims
    assert "queue under allows node groups g2" in reason(result, "r")
