"""Each node's GPU cards as free as the local scheduler sees them, for the hub's card-level fit:
the node's device table (vglobal.scheduler.devices) with the GPUs granted to live pods taken."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vglobal.api.v1 import agent_pb2 as pb
from vglobal.model.gpu_fit import CardFree
from vglobal.scheduler.api import Grant, NodeSpec
from vglobal.scheduler.devices.mig import MigConfig
from vglobal.scheduler.devices.table import DeviceTable

_NO_MIG = MigConfig((), 1)


def node_cards(
    specs: Sequence[NodeSpec], grants: Mapping[str, tuple[str, tuple[Grant, ...]]]
) -> dict[str, tuple[CardFree, ...]]:
    """Per node with cards of known memory, what is free on each (nodes without cards are left out)."""
    table = DeviceTable(specs, _NO_MIG)
    row_of = {s.name: i for i, s in enumerate(specs)}
    for node, given in grants.values():
        if node in row_of:
            table.apply(row_of[node], given, +1)
    out: dict[str, tuple[CardFree, ...]] = {}
    for row, spec in enumerate(specs):
        devs = table.devices[row]
        if not table.managed[row] or not devs:
            continue
        out[spec.name] = tuple(
            CardFree(
                memory_mib=d.memory_mib,
                free_memory_mib=int(d.memory_mib - table.used_mem[row, d.index]),
                free_cores=int(100 - table.used_cores[row, d.index]),
                free_slots=int(d.split - table.used_num[row, d.index]),
                split=d.split,
                model=d.model,
                mode=int(table.mode[row, d.index]),
            )
            for d in devs
        )
    return out


def cards_message(cards: Mapping[str, tuple[CardFree, ...]]) -> list[pb.NodeCards]:
    return [
        pb.NodeCards(
            name=name,
            cards=[
                pb.GpuCardFree(
                    memory_mib=c.memory_mib,
                    free_memory_mib=c.free_memory_mib,
                    free_cores=c.free_cores,
                    free_slots=c.free_slots,
                    split=c.split,
                    model=c.model,
                    mode=c.mode,
                )
                for c in got
            ],
        )
        for name, got in sorted(cards.items())
    ]
