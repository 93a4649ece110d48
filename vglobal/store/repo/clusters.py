"""Member clusters as their agents report them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from vglobal.model.binding import ADMITTED, values
from vglobal.model.forms import placements_from_json
from vglobal.model.phases import ClusterState
from vglobal.model.records import ClusterRow, PlacedJob
from vglobal.store.engine import rowcount
from vglobal.store.tables import clusters, jobs, resource_bindings


def _row(r: sa.Row[Any]) -> ClusterRow:
    return ClusterRow(
        name=r.name,
        labels=r.labels or {},
        state=r.state,
        cordoned=r.cordoned,
        nodes=getattr(r, "nodes", None) or [],
        free=r.free or {},
        last_heartbeat=r.last_heartbeat,
        not_ready_since=r.not_ready_since,
        hypernodes=r.hypernodes or [],
        devices=getattr(r, "devices", None) or {},
        pools=getattr(r, "pools", None) or [],
    )


def _seconds(value: float) -> sa.ColumnElement[Any]:
    return sa.func.make_interval(0, 0, 0, 0, 0, 0, value)


def register(
    name: str,
    *,
    session: Session,
    labels: dict[str, str],
    nodes: list[dict[str, Any]],
    free: dict[str, dict[str, int]],
    hypernodes: list[dict[str, Any]] | None = None,
    pools: list[dict[str, Any]] | None = None,
    stream: str | None = None,
    identity: str | None = None,
    stale_after: float = 0.0,
    dead_after: float = 0.0,
) -> bool:
    """Record the cluster's inventory and make ``stream`` the one that speaks for it.

    False (and nothing written) while another stream does: one that has heartbeated within
    ``stale_after`` seconds, or, for a caller of another identity, within ``dead_after``.
    """
    stmt = insert(clusters).values(
        name=name,
        labels=labels,
        nodes=nodes,
        free=free,
        hypernodes=hypernodes or [],
        pools=pools or [],
        state=ClusterState.Ready,
        stream=stream,
        stream_identity=identity,
    )
    silent = clusters.c.last_heartbeat < sa.func.now() - _seconds(stale_after)
    dead = clusters.c.last_heartbeat < sa.func.now() - _seconds(dead_after)
    upsert = stmt.on_conflict_do_update(
        index_elements=[clusters.c.name],
        set_={
            "labels": stmt.excluded.labels,
            "nodes": stmt.excluded.nodes,
            "free": stmt.excluded.free,
            "devices": {},  # the heartbeat after Registered reports every node's cards again
            "hypernodes": stmt.excluded.hypernodes,
            "pools": stmt.excluded.pools,
            "state": ClusterState.Ready,
            "not_ready_since": None,
            "last_heartbeat": sa.func.now(),
            "registered_at": sa.func.now(),
            "stream": stmt.excluded.stream,
            "stream_identity": stmt.excluded.stream_identity,
        },
        where=sa.or_(
            clusters.c.stream.is_(None),
            clusters.c.stream == stmt.excluded.stream,
            sa.and_(clusters.c.stream_identity == stmt.excluded.stream_identity, silent),
            dead,
        ),
    )
    return session.execute(upsert.returning(clusters.c.name)).first() is not None


def speaks_for(name: str, stream: str, *, session: Session) -> bool:
    """Whether ``stream`` is still the one that speaks for the cluster (locks the row: read and
    record in one transaction, so a take-over cannot slip in between)."""
    found = session.execute(
        sa.select(clusters.c.name)
        .where(clusters.c.name == name, clusters.c.stream == stream)
        .with_for_update()
    ).first()
    return found is not None


def release(name: str, stream: str, *, session: Session) -> None:
    """The stream has ended: the cluster has no live stream until an agent registers again."""
    session.execute(
        sa.update(clusters).where(clusters.c.name == name, clusters.c.stream == stream).values(stream=None)
    )


def heartbeat(
    name: str,
    free_patch: dict[str, dict[str, int]],
    *,
    session: Session,
    cards_patch: dict[str, list[list[Any]]] | None = None,
) -> bool:
    """Merge the changed nodes' free capacity (and card tables) and mark the cluster alive (False:
    no such cluster)."""
    cards = (
        {}
        if not cards_patch
        else {"devices": clusters.c.devices.op("||")(sa.cast(cards_patch, clusters.c.devices.type))}
    )
    res = session.execute(
        sa.update(clusters)
        .where(clusters.c.name == name)
        .values(
            **cards,
            free=clusters.c.free.op("||")(sa.cast(free_patch, clusters.c.free.type)),
            last_heartbeat=sa.func.now(),
            state=ClusterState.Ready,
            not_ready_since=None,
        )
    )
    return bool(rowcount(res))


def list_clusters(
    *, session: Session, names: list[str] | None = None, with_nodes: bool = True
) -> list[ClusterRow]:
    """Cluster rows by name; without ``with_nodes`` their node inventories are left out (empty)."""
    cols = [c for c in clusters.c if with_nodes or c.name != "nodes"]
    stmt = sa.select(*cols).order_by(clusters.c.name)
    if names is not None:
        stmt = stmt.where(clusters.c.name.in_(names))
    return [_row(r) for r in session.execute(stmt).all()]


def versions(*, session: Session) -> dict[str, tuple[str, str]]:
    """Per cluster, its row version and a digest of its node inventory. The version is the row's
    ``xmin`` (the transaction that wrote it): any write gives a new one. Heartbeats rewrite the
    row without changing the inventory, which the digest tells."""
    rows = session.execute(
        sa.text("SELECT name, CAST(xmin AS text), md5(CAST(nodes AS text)) FROM clusters ORDER BY name")
    ).all()
    return {r[0]: (r[1], r[2]) for r in rows}


def get_cluster(name: str, *, session: Session) -> ClusterRow | None:
    r = session.execute(sa.select(clusters).where(clusters.c.name == name)).first()
    return _row(r) if r else None


def delete_cluster(name: str, *, session: Session) -> bool:
    """Remove the cluster's row (False: no such cluster); an agent that registers again brings
    it back."""
    return bool(rowcount(session.execute(sa.delete(clusters).where(clusters.c.name == name))))


def set_cordoned(name: str, cordoned: bool, *, session: Session) -> bool:
    res = session.execute(sa.update(clusters).where(clusters.c.name == name).values(cordoned=cordoned))
    return bool(rowcount(res))


def mark_not_ready(timeout_seconds: float, *, session: Session) -> list[str]:
    """Ready clusters silent for longer than the timeout become NotReady; returns their names."""
    rows = session.execute(
        sa.update(clusters)
        .where(
            clusters.c.state == ClusterState.Ready,
            clusters.c.last_heartbeat
            < sa.func.now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, timeout_seconds),
        )
        .values(state=ClusterState.NotReady, not_ready_since=sa.func.now())
        .returning(clusters.c.name)
    ).all()
    return [r[0] for r in rows]


def ready_among(names: Sequence[str], *, session: Session) -> list[str]:
    """Those of ``names`` that are Ready, or no longer exist."""
    found = dict(
        session.execute(sa.select(clusters.c.name, clusters.c.state).where(clusters.c.name.in_(names))).all()
    )
    return [n for n in names if found.get(n, ClusterState.Ready) == ClusterState.Ready]


def failed_over(after_seconds: float, *, session: Session) -> list[str]:
    """NotReady clusters that have stayed NotReady for longer than the failover delay."""
    rows = session.execute(
        sa.select(clusters.c.name).where(
            clusters.c.state == ClusterState.NotReady,
            clusters.c.not_ready_since
            < sa.func.now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, after_seconds),
        )
    ).all()
    return [r[0] for r in rows]


def db_now(*, session: Session) -> float:
    """The database's clock as epoch seconds: one clock for every hub replica."""
    return float(session.execute(sa.text("SELECT extract(epoch FROM now())")).scalar_one())


def placed_jobs(cluster: str, queues: Sequence[str] | None, *, session: Session) -> list[PlacedJob]:
    """The jobs admitted to ``cluster`` (found by the bindings' phase and cluster index), of
    ``queues`` only when given, by namespace and name."""
    j, b = jobs.c, resource_bindings.c
    stmt = (
        sa.select(j.namespace, j.name, j.queue, j.phase, j.placements)
        .select_from(jobs.join(resource_bindings, b.job_uid == j.uid))
        .where(b.phase.in_(values(ADMITTED)), b.cluster == cluster)
        .order_by(j.namespace, j.name)
    )
    if queues is not None:
        stmt = stmt.where(j.queue.in_(list(queues)))
    return [
        PlacedJob(r.namespace, r.name, r.queue, r.phase, placements_from_json(r.placements))
        for r in session.execute(stmt).all()
    ]
