"""One simulated member cluster as the hub meets it: the agent's own ``AgentCore`` over a
``SimBackend``, with the AgentService messages handed over in memory instead of over a stream.

The hub's picture of the cluster (labels, nodes, free capacity, HyperNodes, GPU cards) is kept as the
hub's cluster row keeps it, from what the agent reports (its Register and its Heartbeats), and turned
into admission's ClusterSnap by the hub's own builder (``vglobal.admission.inputs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal import convert
from vglobal.admission import ClusterSnap
from vglobal.admission.inputs import cluster_snap, device_tables, node_snap
from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import SimCluster
from vglobal.agent.core import AgentCore
from vglobal.agent.runtime import ClusterRuntime
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import Clock
from vglobal.hub.agents.record import card_record
from vglobal.model.cards import CardFree
from vglobal.scheduler import SchedulerConf


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
        self.name = hello.register.cluster
        self._registered(hello.register)
        self.devices: dict[str, list[list[Any]]] = {}
        self._cards: tuple[dict[str, list[list[Any]]], Mapping[str, tuple[CardFree, ...]]] = ({}, {})
        registered = pb.HubMessage(registered=pb.Registered(heartbeat_interval_seconds=heartbeat_interval))
        self.outbox = self.core.on_message(registered)  # the first heartbeat: taken by the hub's next read

    def snap(self) -> ClusterSnap:
        """The cluster as admission sees it: every node's free capacity as last reported."""
        return cluster_snap(
            name=self.name,
            labels=self.labels,
            nodes=(node_snap(n, self.free.get(n["name"])) for n in self.nodes),
            schedulable=True,
            hypernodes=self.hypernodes,
            devices=self._card_tables(),
            unplaced=(),
            pools=self.pools,
        )

    def _card_tables(self) -> Mapping[str, tuple[CardFree, ...]]:
        if self._cards[0] != self.devices:
            self._cards = (dict(self.devices), device_tables(self.devices))
        return self._cards[1]

    def _registered(self, reg: pb.Register) -> None:
        """As the hub's cluster row: labels, nodes, free capacity per node, HyperNodes, node pools
        (GPU cards come with heartbeats)."""
        self.labels = dict(reg.labels)
        self.nodes = convert.node_records(reg.nodes)
        self.free = {n.name: convert.units_of(n.free) for n in reg.nodes}
        self.hypernodes = convert.hypernode_records(reg.hypernodes)
        self.pools = convert.pool_records(reg.pools)

    def send(self, msg: pb.HubMessage) -> None:
        self.outbox += self.core.on_message(msg)

    def tick(self) -> list[pb.AgentMessage]:
        """One agent cycle: what it had to say since, then what the cycle produced."""
        out, self.outbox = [*self.outbox, *self.core.tick()], []
        for m in out:
            if m.WhichOneof("body") == "register":  # its nodes changed (a pool grew)
                self._registered(m.register)
            elif m.WhichOneof("body") == "heartbeat":
                self.free.update({n.name: convert.units_of(n.free) for n in m.heartbeat.nodes})
                self.devices.update({n.name: [card_record(c) for c in n.cards] for n in m.heartbeat.cards})
        return out

    def next_event_time(self) -> float | None:
        return self.core.runtime.next_event_time()
