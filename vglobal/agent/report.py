"""The messages an agent sends: inventory, heartbeats, acknowledgements and job status (built
from the agent's own types here, from shared model types by ``vglobal.convert``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from vglobal.agent.backends.base import PoolSpec
from vglobal.agent.cards import card_uses, cards_message
from vglobal.agent.run import JobRun, RunEvent
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.convert import hypernode, placement_report, task_status, units
from vglobal.model.cards import CardFree
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import Grant, NodeSpec
from vglobal.scheduler.devices import node_gpus


def register(
    cluster: str,
    labels: Mapping[str, str],
    nodes: Iterable[NodeSpec],
    free: Mapping[str, ResourceVector],
    runs: Iterable[JobRun],
    version: str,
    hyper_nodes: Iterable[ResolvedHyperNode] = (),
    pools: Iterable[PoolSpec] = (),
) -> pb.AgentMessage:
    inventory = [
        pb.NodeInventory(
            name=n.name,
            labels=dict(n.labels),
            allocatable=units(n.allocatable),
            free=units(free.get(n.name, n.allocatable)),
            taints=[pb.Taint(key=t.key, value=t.value, effect=t.effect) for t in n.taints],
            unschedulable=n.unschedulable,
            gpus=[
                pb.GpuDevice(index=g.index, memory_mib=g.memory_mib, model=g.model, mig=g.mig)
                for g in node_gpus(n)
            ],
        )
        for n in nodes
    ]
    topology = [hypernode(h) for h in hyper_nodes]
    jobs = [pb.JobRunRef(job_uid=r.uid, generation=r.generation) for r in runs if not r.finished]
    body = pb.Register(
        cluster=cluster,
        labels=dict(labels),
        nodes=inventory,
        jobs=jobs,
        agent_version=version,
        hypernodes=topology,
        takes_batches=True,  # the hub link unpacks HubMessage.batch
        pools=[
            pb.NodePool(
                name=p.name,
                allocatable=units(p.allocatable),
                labels=dict(p.labels),
                current=p.current,
                max=p.max,
                provision_seconds=p.provision_seconds,
            )
            for p in pools
        ],
    )
    return pb.AgentMessage(register=body)


def heartbeat(
    free: Mapping[str, ResourceVector],
    api_problem: str = "",
    cards: Mapping[str, tuple[CardFree, ...]] | None = None,
) -> pb.AgentMessage:
    nodes = [pb.NodeFree(name=name, free=units(vec)) for name, vec in sorted(free.items())]
    body = pb.Heartbeat(
        nodes=nodes,
        api_unreachable=bool(api_problem),
        api_error=api_problem,
        cards=cards_message(cards or {}),
    )
    return pb.AgentMessage(heartbeat=body)


def accepted(uid: str, generation: int) -> pb.AgentMessage:
    return pb.AgentMessage(accepted=pb.BindingAccepted(job_uid=uid, generation=generation))


def rejected(uid: str, generation: int, reason: str) -> pb.AgentMessage:
    return pb.AgentMessage(rejected=pb.BindingRejected(job_uid=uid, generation=generation, reason=reason))


def _event(e: RunEvent) -> pb.AgentEvent:
    return pb.AgentEvent(kind=e.kind, reason=e.reason, message=e.message, time=e.time)


def job_status(
    run: JobRun, events: Iterable[RunEvent], grants: Mapping[str, tuple[str, tuple[Grant, ...]]] | None = None
) -> pb.AgentMessage:
    """``grants``: the GPUs of the pods that hold some (a placement names its cards)."""
    placements = run.placements()
    if grants:
        placements = [
            replace(p, cards=card_uses(got[1])) if p.node and (got := grants.get(p.uid)) else p
            for p in placements
        ]
    status = pb.JobStatus(
        job_uid=run.uid,
        generation=run.generation,
        phase=str(run.phase),
        tasks=[task_status(t) for t in run.task_counts()],
        placements=[placement_report(p) for p in placements],
        events=[_event(e) for e in events],
        retry_count=run.retry_count,
        message=run.message,
        observed_generation=run.spec_generation,
        checkpointed_at=run.checkpointed or 0.0,
    )
    return pb.AgentMessage(status=status)
