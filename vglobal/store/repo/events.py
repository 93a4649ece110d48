"""The append-only event log behind `describe` and job history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.records import EventRow
from vglobal.store.repo.live import cursor
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
    principal: str | None = None  # who made the call (audit)
    subject: str | None = None  # what a job-less event is about: "queue team-a", "job default/x"
    owner_uid: str | None = None  # a CronJob's or JobFlow's event


def add_events(new: Sequence[NewEvent], *, session: Session, notify: str | None = None) -> None:
    """One INSERT ... SELECT FROM unnest(...) for all of them, whatever their number; with
    ``notify``, the same statement also queues that NOTIFY (delivered when the caller commits),
    one round trip less on the submit path."""
    if not new:
        return
    insert = (
        "INSERT INTO events (time, job_uid, cluster, kind, reason, message, source, principal, "
        "subject, owner_uid) "
        "SELECT coalesce(t, now()), j, c, k, r, m, s, p, o, w FROM unnest("
        # binary arrays: the driver escapes each element of a text array in Python
        "CAST(%(t)b AS timestamptz[]), CAST(%(j)b AS text[]), CAST(%(c)b AS text[]), CAST(%(k)b AS text[]), "
        "CAST(%(r)b AS text[]), CAST(%(m)b AS text[]), CAST(%(s)b AS text[]), CAST(%(p)b AS text[]), "
        "CAST(%(o)b AS text[]), CAST(%(w)b AS text[])) AS e(t, j, c, k, r, m, s, p, o, w)"
    )
    with cursor(session) as cur:
        cur.execute(
            f"WITH e AS ({insert}) SELECT pg_notify(%(n)s, '')" if notify else insert,
            {
                "t": [e.time for e in new],
                "j": [e.job_uid for e in new],
                "c": [e.cluster for e in new],
                "k": [e.kind for e in new],
                "r": [e.reason for e in new],
                "m": [e.message for e in new],
                "s": [e.source for e in new],
                "p": [e.principal for e in new],
                "o": [e.subject for e in new],
                "w": [e.owner_uid for e in new],
                "n": notify,
            },
        )


def _row(r: sa.Row[Any]) -> EventRow:
    return EventRow(
        r.id, r.time, r.job_uid, r.cluster, r.kind, r.reason, r.message, r.source, r.principal, r.subject
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
    return [_row(r) for r in reversed(rows)]


def last_about(subject: str, reason: str, *, session: Session) -> EventRow | None:
    """The latest event of ``reason`` about a subject (e.g. who deleted ``job default/x``)."""
    r = session.execute(
        sa.select(events)
        .where(events.c.subject == subject, events.c.reason == reason)
        .order_by(events.c.id.desc())
        .limit(1)
    ).first()
    return _row(r) if r is not None else None
