"""Each queue's decayed usage (fair share over time), as the leader last stored it."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from vglobal.model.records import StoredUsage
from vglobal.store.tables import queue_usage


def store(rows: Iterable[StoredUsage], *, session: Session) -> None:
    """Every queue's row in one statement."""
    values = [
        {"queue": r.queue, "usage": r.usage, "rolled": r.rolled, "share": r.share, "at": r.at} for r in rows
    ]
    if not values:
        return
    stmt = insert(queue_usage).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[queue_usage.c.queue],
        set_={c: stmt.excluded[c] for c in ("usage", "rolled", "share", "at")},
    )
    session.execute(stmt)


def load(*, session: Session) -> dict[str, StoredUsage]:
    rows = session.execute(sa.select(queue_usage)).all()
    return {
        r.queue: StoredUsage(
            r.queue,
            {k: float(v) for k, v in r.usage.items()},
            {k: float(v) for k, v in r.rolled.items()},
            float(r.share),
            float(r.at),
        )
        for r in rows
    }


def forget(queue: str, *, session: Session) -> None:
    session.execute(sa.delete(queue_usage).where(queue_usage.c.queue == queue))
