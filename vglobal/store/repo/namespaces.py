"""v1 Namespaces the hub holds (the queue a job naming none goes to)."""

from __future__ import annotations

from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from vglobal.model.binding import UNFINISHED, values
from vglobal.model.namespace import Namespace
from vglobal.store.tables import jobs, namespaces, resource_bindings


class NamespaceRow(NamedTuple):
    name: str
    queue: str  # its scheduling.volcano.sh/queue-name annotation; "" when none
    manifest: dict[str, Any]


def upsert_namespace(ns: Namespace, *, session: Session) -> None:
    values_ = {"name": ns.name, "queue": ns.queue, "manifest": ns.raw}
    stmt = insert(namespaces).values(values_)
    stmt = stmt.on_conflict_do_update(
        index_elements=[namespaces.c.name], set_={k: stmt.excluded[k] for k in values_ if k != "name"}
    )
    session.execute(stmt)


def _row(r: Any) -> NamespaceRow:
    return NamespaceRow(r.name, r.queue, dict(r.manifest))


def get_namespace(name: str, *, session: Session) -> NamespaceRow | None:
    r = session.execute(sa.select(namespaces).where(namespaces.c.name == name)).first()
    return _row(r) if r else None


def queues_of(names: list[str], *, session: Session) -> dict[str, str]:
    """The queue annotation of each of ``names`` the hub holds (those naming a queue only)."""
    stmt = sa.select(namespaces.c.name, namespaces.c.queue).where(
        namespaces.c.name.in_(names), namespaces.c.queue != ""
    )
    return {r.name: r.queue for r in session.execute(stmt)}


def list_namespaces(*, session: Session) -> list[NamespaceRow]:
    return [_row(r) for r in session.execute(sa.select(namespaces).order_by(namespaces.c.name))]


def delete_namespace(name: str, *, session: Session) -> NamespaceRow | None:
    r = session.execute(sa.delete(namespaces).where(namespaces.c.name == name).returning(namespaces)).first()
    return _row(r) if r else None


def live_job_count(name: str, *, session: Session) -> int:
    """Jobs in the namespace that have not finished."""
    stmt = (
        sa.select(sa.func.count())
        .select_from(jobs.join(resource_bindings, resource_bindings.c.job_uid == jobs.c.uid))
        .where(jobs.c.namespace == name)
        .where(resource_bindings.c.phase.in_(values(UNFINISHED)))
    )
    return int(session.execute(stmt).scalar_one())
