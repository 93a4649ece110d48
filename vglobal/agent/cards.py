"""Each node's GPU cards as free as the local scheduler sees them, for the hub's card-level fit:
the node's device table (vglobal.scheduler.devices) with the GPUs granted to live pods taken."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vglobal import convert
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.model.cards import CardFree, CardUse, MigCard
from vglobal.scheduler import SchedulerConf
from vglobal.scheduler.api import Grant, NodeSpec
from vglobal.scheduler.devices.mig import DEFAULT_MIG, MigConfig, mig_config_of
from vglobal.scheduler.devices.table import DeviceTable


def _deviceshare(conf: SchedulerConf) -> Mapping[str, Any] | None:
    for tier in conf.tiers:
        for plugin in tier:
            if plugin.name == "deviceshare":
                return plugin.arguments
    return None


def mig_config(conf: SchedulerConf) -> MigConfig:
    """The MIG geometries this agent's deviceshare plugin cuts GPUs by (its defaults without it)."""
    args = _deviceshare(conf)
    return DEFAULT_MIG if args is None else mig_config_of(args)


def card_policy(conf: SchedulerConf) -> str:
    """The order deviceshare gives a pod its cards in (deviceshare.SchedulePolicy; "" = by index)."""
    args = _deviceshare(conf) or {}
    return str(args.get("deviceshare.SchedulePolicy", "") or "").lower()


def card_uses(grants: tuple[Grant, ...]) -> tuple[CardUse, ...]:
    """A pod's granted cards as the hub keeps them with its placement."""
    return tuple(
        CardUse(
            g.device,
            g.memory_mib,
            g.cores,
            g.whole,
            g.geometry,
            "" if g.instance is None else g.instance.name,
        )
        for g in grants
    )


def node_cards(
    specs: Sequence[NodeSpec],
    grants: Mapping[str, tuple[str, tuple[Grant, ...]]],
    mig: MigConfig = DEFAULT_MIG,
    policy: str = "",
    groups: Mapping[str, str] | None = None,
) -> dict[str, tuple[CardFree, ...]]:
    """Per node with cards of known memory, what is free on each (nodes without cards are left out);
    a MIG-capable card also says its geometries and the instances taken, as ``mig`` cuts it, and
    every card its UUID and the PodGroups (``groups``: pod uid -> its job's uid) of its vGPU pods."""
    table = DeviceTable(specs, mig)
    row_of = {s.name: i for i, s in enumerate(specs)}
    for uid, (node, given) in grants.items():
        if node in row_of:
            table.apply(row_of[node], given, +1, (groups or {}).get(uid, ""))
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
                mig=_mig_card(table, row, d.index) if d.mig else None,
                policy=policy,
                uuid=d.uuid,
                holders=_holders(table, row, d.index),
            )
            for d in devs
        )
    return out


def _holders(table: DeviceTable, row: int, index: int) -> tuple[str, ...]:
    held = table.holders.get((row, index), {})
    return tuple(sorted(g for g, n in held.items() for _ in range(n)))


def _mig_card(table: DeviceTable, row: int, index: int) -> MigCard:
    gpu = table.devices[row][index]
    state = table.mig_state.get((row, index))
    return MigCard(
        table.mig_config.geometries(gpu.model, gpu.memory_mib),
        None if state is None else state.geometry,
        () if state is None else tuple(sorted((n, c) for n, c in state.used.items() if c)),
        table.mig_config.memory_factor,
    )


def cards_message(cards: Mapping[str, tuple[CardFree, ...]]) -> list[pb.NodeCards]:
    return [
        pb.NodeCards(name=name, cards=[convert.card_message(c) for c in got])
        for name, got in sorted(cards.items())
    ]
