"""One simulated member cluster as the hub meets it: the agent's own ``AgentCore`` over a
``SimBackend``, with the AgentService messages handed over in memory instead of over a stream.

The hub's picture of the cluster (labels, nodes, free capacity, HyperNodes, GPU cards) is built only from
what the agent reports, its Register and its Heartbeats, as the hub builds it from its stream.
"""

from __future__ import annotations

from vglobal import convert
from vglobal.admission import ClusterSnap, HyperNodeSnap, NodeSnap
from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import SimCluster
from vglobal.agent.core import AgentCore
from vglobal.agent.runtime import ClusterRuntime
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import Clock
from vglobal.model.cards import CardFree
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import SchedulerConf

_BLOCKING_TAINTS = ("NoSchedule", "NoExecute")


def _units(u: pb.Units) -> ResourceVector:
    return ResourceVector({k: int(v) for k, v in u.values.items()})


def _usable(n: pb.NodeInventory) -> bool:
    """A node admission may count on: schedulable, no taint that keeps pods off."""
    return not n.unschedulable and not any(t.effect in _BLOCKING_TAINTS for t in n.taints)


class SimAgent:
    def __init__(
        self,
        cluster: SimCluster,
        clock: Clock,
        conf: SchedulerConf,
        *,
        bind_timeout: float | None = None,
        heartbeat_interval: float = 5.0,
    ) -> None:
        runtime = ClusterRuntime(SimBackend(cluster), clock, conf, bind_timeout=bind_timeout)
        self.core = AgentCore(runtime, heartbeat_interval=heartbeat_interval)
        (hello,) = self.core.on_connected()
        reg = hello.register
        self.name = reg.cluster
        self._labels = dict(reg.labels)
        self._nodes = [(n.name, _units(n.allocatable), dict(n.labels), _usable(n)) for n in reg.nodes]
        self.free = {n.name: _units(n.free) for n in reg.nodes}
        self.cards: dict[str, tuple[CardFree, ...]] = {}  # per GPU node, its cards as last reported
        self._hypernodes = tuple(
            HyperNodeSnap(name=h.name, tier=h.tier, parent=h.parent or None, nodes=tuple(h.nodes))
            for h in reg.hypernodes
        )
        registered = pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=heartbeat_interval))
        self.outbox = self.core.on_message(registered)  # the first heartbeat: taken by the hub's next read

    def snap(self) -> ClusterSnap:
        """The cluster as admission sees it: every node's free capacity as last reported."""
        nodes = tuple(
            NodeSnap(
                name, self.free.get(name, ResourceVector()) if usable else ResourceVector(), alloc, labels
            )
            for name, alloc, labels, usable in sorted(self._nodes)
        )
        return ClusterSnap(self.name, self._labels, nodes, True, self._hypernodes, devices=dict(self.cards))

    def send(self, msg: pb.HubMessage) -> None:
        self.outbox += self.core.on_message(msg)

    def tick(self) -> list[pb.AgentMessage]:
        """One agent cycle: what it had to say since, then what the cycle produced."""
        out, self.outbox = [*self.outbox, *self.core.tick()], []
        for m in out:
            if m.WhichOneof("body") == "heartbeat":
                self.free.update({n.name: _units(n.free) for n in m.heartbeat.nodes})
                self.cards.update(
                    {n.name: tuple(convert.card_of(c) for c in n.cards) for n in m.heartbeat.cards}
                )
        return out

    def next_event_time(self) -> float | None:
        return self.core.runtime.next_event_time()
