"""An agent's Register recorded: its cluster's inventory, and its stream made the cluster's one
live stream (``stream`` is its id) until the stream is released."""

from __future__ import annotations

from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import agent_pb2
from vglobal.config import HubSettings
from vglobal.hub.errors import AlreadyExists
from vglobal.hub.notify import DISPATCH, notify
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent

# A stream that has not heartbeated for this many intervals may be taken over by its own identity.
MISSED_HEARTBEATS = 3


def register(
    reg: agent_pb2.Register, *, stream: str, identity: str, settings: HubSettings, session: Session
) -> None:
    """Record the inventory and make ``stream`` the cluster's; ALREADY_EXISTS while another
    stream is live (see clusters_repo.register). The caller owns the transaction."""
    nodes = convert.node_records(reg.nodes)
    interval = settings.heartbeat_interval
    if not clusters_repo.register(
        reg.cluster,
        session=session,
        labels=dict(reg.labels),
        nodes=nodes,
        free={n.name: convert.units_of(n.free) for n in reg.nodes},
        hypernodes=convert.hypernode_records(reg.hypernodes),
        pools=convert.pool_records(reg.pools),
        stream=stream,
        identity=identity,
        stale_after=MISSED_HEARTBEATS * interval,
        dead_after=max(settings.cluster_timeout, MISSED_HEARTBEATS * interval),
    ):
        raise AlreadyExists(
            f'cluster "{reg.cluster}" already has a live agent stream; another may take over only '
            f"with the same identity once that one has missed {MISSED_HEARTBEATS} heartbeats"
        )
    message = f"{len(nodes)} nodes, {len(reg.jobs)} running jobs"
    events_repo.add_events(
        [NewEvent("Registered", message, cluster=reg.cluster, principal=identity)], session=session
    )
    notify(DISPATCH, session=session)


def release(cluster: str, stream: str, *, session: Session) -> None:
    """The stream no longer speaks for its cluster (if it still did)."""
    clusters_repo.release(cluster, stream, session=session)
