"""CronJobs: the manifest as applied, the status the leader keeps, and when to look next."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Session

from vglobal.model.records import CronJobRow
from vglobal.store.engine import rowcount
from vglobal.store.tables import cron_jobs

_c = cron_jobs.c


def _row(r: sa.Row[Any]) -> CronJobRow:
    return CronJobRow(
        uid=r.uid,
        namespace=r.namespace,
        name=r.name,
        manifest=r.manifest,
        status=r.status or {},
        next_time=r.next_time,
        created_at=r.created_at,
    )


def insert_cron(
    uid: str, namespace: str, name: str, manifest: dict[str, Any], *, created_at: datetime, session: Session
) -> bool:
    """Store a new CronJob, to be looked at at once; False when one of that name exists already
    (nothing written). ``created_at`` is by the hub's clock, which reads the schedules."""
    stmt = (
        insert(cron_jobs)
        .values(
            uid=uid,
            namespace=namespace,
            name=name,
            manifest=manifest,
            created_at=created_at,
            next_time=created_at,
        )
        .on_conflict_do_nothing()
        .returning(cron_jobs.c.uid)
    )
    # RETURNING, not rowcount: the driver reports -1 for an INSERT ... ON CONFLICT DO NOTHING.
    return session.execute(stmt).scalar() is not None


def replace_manifest(uid: str, manifest: dict[str, Any], *, look_at: datetime, session: Session) -> None:
    """A re-applied CronJob: its new spec; the status stays, the next look is at ``look_at``."""
    session.execute(
        sa.update(cron_jobs)
        .where(_c.uid == uid)
        .values(manifest=manifest, next_time=look_at, updated_at=sa.func.now())
    )


def set_suspend(uid: str, suspend: bool, *, look_at: datetime, session: Session) -> None:
    session.execute(
        sa.update(cron_jobs)
        .where(_c.uid == uid)
        .values(
            manifest=sa.func.jsonb_set(
                _c.manifest,
                sa.cast(sa.literal("{spec,suspend}"), ARRAY(sa.Text)),
                sa.func.to_jsonb(sa.literal(suspend)),
                True,
            ),
            next_time=look_at,
            updated_at=sa.func.now(),
        )
    )


def get_cron(
    *,
    session: Session,
    uid: str | None = None,
    namespace: str = "default",
    name: str = "",
    for_update: bool = False,
) -> CronJobRow | None:
    stmt = sa.select(cron_jobs)
    stmt = stmt.where(_c.uid == uid) if uid else stmt.where(_c.namespace == namespace, _c.name == name)
    if for_update:
        stmt = stmt.with_for_update()
    r = session.execute(stmt).first()
    return _row(r) if r else None


def list_crons(*, session: Session, namespace: str = "") -> list[CronJobRow]:
    stmt = sa.select(cron_jobs).order_by(_c.namespace, _c.name)
    if namespace:
        stmt = stmt.where(_c.namespace == namespace)
    return [_row(r) for r in session.execute(stmt).all()]


def uids(*, session: Session, due_at: datetime | None = None) -> list[str]:
    """Every CronJob, or only those whose next look is due at ``due_at``."""
    stmt = sa.select(_c.uid).order_by(_c.namespace, _c.name)
    if due_at is not None:
        stmt = stmt.where(_c.next_time <= due_at)
    return list(session.execute(stmt).scalars().all())


def earliest_next_time(*, session: Session) -> datetime | None:
    return session.execute(sa.select(sa.func.min(_c.next_time))).scalar()


def save_status(
    uid: str, status: dict[str, Any], next_time: datetime | None, *, looked_at: datetime, session: Session
) -> None:
    """The status a look left, and the hub-clock time of that look (``lookedAt``)."""
    session.execute(
        sa.update(cron_jobs)
        .where(_c.uid == uid)
        .values(
            status={**status, "lookedAt": looked_at.timestamp()},
            next_time=next_time,
            updated_at=sa.func.now(),
        )
    )


def delete_cron(uid: str, *, session: Session) -> bool:
    return bool(rowcount(session.execute(sa.delete(cron_jobs).where(_c.uid == uid))))
