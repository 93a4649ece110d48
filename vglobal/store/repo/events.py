"""The append-only event log behind `describe` and job history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.store.rows import EventRow
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


def add_events(new: Sequence[NewEvent], *, session: Session) -> None:
    """One INSERT for all of them."""
    if not new:
        return
    rows = [
        {
            "job_uid": e.job_uid,
            "cluster": e.cluster,
            "kind": e.kind,
            "reason": e.reason,
            "message": e.message,
            "source": e.source,
            **({"time": e.time} if e.time is not None else {}),
        }
        for e in new
    ]
    timed = [r for r in rows if "time" in r]
    untimed = [r for r in rows if "time" not in r]
    if untimed:
        session.execute(sa.insert(events), untimed)
    if timed:
        session.execute(sa.insert(events), timed)


def job_events(job_uid: str, *, session: Session, limit: int = 200) -> list[EventRow]:
    rows = session.execute(
        sa.select(events).where(events.c.job_uid == job_uid).order_by(events.c.id.desc()).limit(limit)
    ).all()
    return [
        EventRow(r.id, r.time, r.job_uid, r.cluster, r.kind, r.reason, r.message, r.source)
        for r in reversed(rows)
    ]
