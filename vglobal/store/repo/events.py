"""The append-only event log behind `describe` and job history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.records import EventRow
from vglobal.store.tables import events


@dataclass(frozen=True)
class NewEvent:
    reason: str
    message: str = ""
    job_uid: str | None = None
    cluster: str | None = None
    kind: str = "Normal"
    source: str = "hub"
    time: datetime | None = None
    owner_uid: str | None = None  # a CronJob's or JobFlow's event


def add_events(new: Sequence[NewEvent], *, session: Session) -> None:
    """One INSERT ... SELECT FROM unnest(...) for all of them, whatever their number."""
    if not new:
        return
    session.execute(
        sa.text(
            "INSERT INTO events (time, job_uid, cluster, kind, reason, message, source, owner_uid) "
            "SELECT coalesce(t, now()), j, c, k, r, m, s, o FROM unnest("
            "CAST(:t AS timestamptz[]), CAST(:j AS text[]), CAST(:c AS text[]), CAST(:k AS text[]), "
            "CAST(:r AS text[]), CAST(:m AS text[]), CAST(:s AS text[]), CAST(:o AS text[])) "
            "AS e(t, j, c, k, r, m, s, o)"
        ),
        {
            "t": [e.time for e in new],
            "j": [e.job_uid for e in new],
            "c": [e.cluster for e in new],
            "k": [e.kind for e in new],
            "r": [e.reason for e in new],
            "m": [e.message for e in new],
            "s": [e.source for e in new],
            "o": [e.owner_uid for e in new],
        },
    )


def job_events(job_uid: str, *, session: Session, limit: int = 200) -> list[EventRow]:
    return _latest(events.c.job_uid == job_uid, session=session, limit=limit)


def owner_events(owner_uid: str, *, session: Session, limit: int = 200) -> list[EventRow]:
    """A CronJob's or JobFlow's own events, oldest first."""
    return _latest(events.c.owner_uid == owner_uid, session=session, limit=limit)


def delete_owner_events(owner_uid: str, *, session: Session) -> None:
    session.execute(sa.delete(events).where(events.c.owner_uid == owner_uid))


def _latest(where: sa.ColumnElement[bool], *, session: Session, limit: int) -> list[EventRow]:
    rows = session.execute(sa.select(events).where(where).order_by(events.c.id.desc()).limit(limit)).all()
    return [
        EventRow(r.id, r.time, r.job_uid, r.cluster, r.kind, r.reason, r.message, r.source)
        for r in reversed(rows)
    ]
