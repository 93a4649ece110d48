"""The append-only event log behind `describe` and job history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
    principal: str | None = None  # who made the call (audit)
    subject: str | None = None  # what a job-less event is about: "queue team-a", "job default/x"


def add_events(new: Sequence[NewEvent], *, session: Session) -> None:
    """One INSERT ... SELECT FROM unnest(...) for all of them, whatever their number."""
    if not new:
        return
    session.execute(
        sa.text(
            "INSERT INTO events (time, job_uid, cluster, kind, reason, message, source, principal, subject) "
            "SELECT coalesce(t, now()), j, c, k, r, m, s, p, o FROM unnest("
            "CAST(:t AS timestamptz[]), CAST(:j AS text[]), CAST(:c AS text[]), CAST(:k AS text[]), "
            "CAST(:r AS text[]), CAST(:m AS text[]), CAST(:s AS text[]), CAST(:p AS text[]), "
            "CAST(:o AS text[])) AS e(t, j, c, k, r, m, s, p, o)"
        ),
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
        },
    )


def _row(r: sa.Row[Any]) -> EventRow:
    return EventRow(
        r.id, r.time, r.job_uid, r.cluster, r.kind, r.reason, r.message, r.source, r.principal, r.subject
    )


def job_events(job_uid: str, *, session: Session, limit: int = 200) -> list[EventRow]:
    rows = session.execute(
        sa.select(events).where(events.c.job_uid == job_uid).order_by(events.c.id.desc()).limit(limit)
    ).all()
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
