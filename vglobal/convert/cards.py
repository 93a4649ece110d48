"""GPU cards between our forms and the agent's messages: what a node's cards have free (GpuCardFree)
and what one pod holds of them (CardUse)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vglobal.api.v1 import agent_pb2
from vglobal.model.cards import CardFree, CardUse, MigCard
from vglobal.model.gpu_fit import MIG, MILLI, VGPU_CORES, VGPU_MEMORY, VGPU_NUMBER
from vglobal.model.mig_fit import MigInstance


def card_use(u: CardUse) -> agent_pb2.CardUse:
    geometry = -1 if u.geometry is None else u.geometry
    return agent_pb2.CardUse(
        device=u.device,
        memory_mib=u.memory_mib,
        cores=u.cores,
        whole=u.whole,
        geometry=geometry,
        instance=u.instance,
    )


def card_use_of(msg: agent_pb2.CardUse) -> CardUse:
    geometry = None if msg.geometry < 0 else msg.geometry
    return CardUse(msg.device, msg.memory_mib, msg.cores, msg.whole, geometry, msg.instance)


def card_message(c: CardFree) -> agent_pb2.GpuCardFree:
    msg = agent_pb2.GpuCardFree(
        memory_mib=c.memory_mib,
        free_memory_mib=c.free_memory_mib,
        free_cores=c.free_cores,
        free_slots=c.free_slots,
        split=c.split,
        model=c.model,
        mode=c.mode,
        policy=c.policy,
        uuid=c.uuid,
        holders=c.holders,
    )
    if c.mig is not None:
        msg.mig_capable = True
        msg.mig_geometry = -1 if c.mig.geometry is None else c.mig.geometry
        msg.mig_memory_factor = c.mig.factor
        for g in c.mig.groups:
            msg.mig_geometries.add(
                instances=[
                    agent_pb2.MigProfile(name=i.name, memory_mib=i.memory_mib, count=i.count) for i in g
                ]
            )
        msg.mig_used.extend(agent_pb2.MigUsed(name=n, count=k) for n, k in c.mig.used)
    return msg


def card_of(msg: agent_pb2.GpuCardFree) -> CardFree:
    mig = None
    if msg.mig_capable:
        mig = MigCard(
            tuple(
                tuple(MigInstance(i.name, i.memory_mib, i.count) for i in g.instances)
                for g in msg.mig_geometries
            ),
            None if msg.mig_geometry < 0 else msg.mig_geometry,
            tuple((u.name, u.count) for u in msg.mig_used),
            max(msg.mig_memory_factor, 1),
        )
    return CardFree(
        msg.memory_mib,
        msg.free_memory_mib,
        msg.free_cores,
        msg.free_slots,
        msg.split,
        msg.model,
        msg.mode,
        mig,
        msg.policy,
        msg.uuid,
        tuple(msg.holders),
    )


def vgpu_free(cards: Sequence[CardFree]) -> dict[str, int]:
    """What a node's cards leave for vGPU pods, as its ``volcano.sh/vgpu-*`` free (milli-units, as
    every amount). Only a card a vGPU pod may still use counts: one a whole-GPU pod holds (no memory
    or compute left) or one cut into MIG instances leaves none, although the node's request sums
    (which whole-GPU pods, asking ``nvidia.com/gpu``, never touch) would call all of it free."""
    usable = [
        c for c in cards if c.mode != MIG and c.free_slots > 0 and c.free_memory_mib > 0 and c.free_cores > 0
    ]
    return {
        VGPU_NUMBER: sum(c.free_slots for c in usable) * MILLI,
        VGPU_MEMORY: sum(c.free_memory_mib for c in usable) * MILLI,
        VGPU_CORES: sum(c.free_cores for c in usable) * MILLI,
    }


def node_free(
    free: Mapping[str, int], allocatable: Mapping[str, Any], cards: Sequence[Sequence[object]] | None
) -> dict[str, int]:
    """A node's free amounts to show: as its agent reported them, the vGPU ones from its cards
    (``cards``: the stored CardFree rows) when it has any."""
    out = dict(free)
    if cards:
        got = vgpu_free([CardFree.from_json(c) for c in cards])
        out.update({k: v for k, v in got.items() if k in allocatable})
    return out
