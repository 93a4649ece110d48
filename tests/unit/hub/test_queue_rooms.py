"""Which queues' room beyond gangs the hub splits among clusters (and sends agents as QueueLimits):
those whose real capability binds, below the federation's total on some resource."""

from __future__ import annotations

from tests.unit.admission.builders import GPU, cluster, gpus, jobs, res
from vglobal.admission import QueueSnap, Snapshot, admit
from vglobal.hub.dispatch.held import binding, held_by_cluster, queue_rooms
from vglobal.model.resources import ResourceVector

CLUSTERS = (cluster("east", 4, res(cpu=64, gpu=8)), cluster("west", 4, res(cpu=64, gpu=8)))  # 64 GPUs


def _rooms(queues: list[QueueSnap]) -> tuple[set[str], set[str]]:
    pending = jobs("p", queues[0].name, gpus(1), 3)
    snap = Snapshot(now=0, queues=tuple(queues), clusters=CLUSTERS, pending=tuple(pending))
    result = admit(snap)
    rooms = queue_rooms(snap, result, held_by_cluster(snap, result), lambda uid: None)
    return {q for q, c in binding(result).items() if c is not None}, set(rooms)


def test_only_a_capability_below_the_total_splits_a_room() -> None:
    got = _rooms(
        [
            QueueSnap("p", capability=gpus(40)),
            QueueSnap("p-x", parent="p"),  # under a capped parent
            QueueSnap("wide", capability=ResourceVector({GPU: 100_000, "cpu": 1_000_000})),
            QueueSnap("plain"),
        ]
    )
    # root, a capability past the total and none at all never bind: no room, no QueueLimits
    assert got == ({"p", "p-x"}, {"p", "p-x"})


def test_siblings_guarantees_bind_a_queue_without_a_capability() -> None:
    # what the hub holds back for another queue's guarantee the agents must not fill either
    got = _rooms([QueueSnap("plain"), QueueSnap("sure", guarantee=gpus(8))])
    assert got == ({"plain"}, {"plain"})
