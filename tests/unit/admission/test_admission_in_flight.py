"""Gangs dispatched to a cluster whose agent has not reported their pods yet (Dispatched, Bound):
the nodes' free capacity as last heartbeated does not show them, so admission takes their room
first and the next gang goes where it really fits."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, cluster, gpus, job
from vglobal.admission import QueueSnap, Snapshot, admit

Q = (QueueSnap("q"),)


def test_the_next_gang_goes_where_the_dispatched_ones_left_room() -> None:
    east, west = cluster("east", 2, gpus(8)), cluster("west", 2, gpus(8))
    big = job("llm-pretrain", "q", gpus(8), pods=2)
    # Nothing in flight: the tie goes to the name.
    assert admitted(admit(Snapshot(0, Q, (east, west), (big,)))) == {"llm-pretrain": "east"}
    # One 8-GPU pod dispatched to east and not placed yet: east has one whole node left.
    busy = replace(east, unplaced=(((gpus(8), 1),),))
    assert admitted(admit(Snapshot(0, Q, (busy, west), (big,)))) == {"llm-pretrain": "west"}


def test_dispatched_gangs_are_packed_as_the_agent_packs_them() -> None:
    # The README's gpu-east: two GPU gangs in flight (2 x 4 and 2 x 1 GPUs) leave two whole
    # 8-GPU nodes, as the agent's binpack leaves them, so the 2 x 8 gang still fits there.
    east = replace(cluster("east", 4, gpus(8)), unplaced=(((gpus(4), 2),), ((gpus(1), 2),)))
    west = cluster("west", 2, gpus(8))
    big = job("llm-pretrain", "q", gpus(8), pods=2)
    assert admitted(admit(Snapshot(0, Q, (east, west), (big,)))) == {"llm-pretrain": "east"}
    # One more 8-GPU pod in flight there and it does not: the gang goes west.
    fuller = replace(east, unplaced=(*east.unplaced, ((gpus(8), 1),)))
    assert admitted(admit(Snapshot(0, Q, (fuller, west), (big,)))) == {"llm-pretrain": "west"}
