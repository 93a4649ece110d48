"""GPU cards between our forms and the agent's messages: what a node's cards have free (GpuCardFree)
and what one pod holds of them (CardUse)."""

from __future__ import annotations

from vglobal.api.v1 import agent_pb2
from vglobal.model.cards import CardFree, CardUse, MigCard
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
