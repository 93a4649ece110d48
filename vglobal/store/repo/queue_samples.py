"""Each queue's share over time: what the leader samples once a minute, read back by time range
and pruned by age in batches."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.records import QueueSample
from vglobal.store.engine import rowcount
from vglobal.store.tables import queue_samples


def add_samples(samples: Sequence[QueueSample], *, session: Session) -> None:
    """One statement for all; a queue sampled again in the same slot keeps the later figures."""
    if not samples:
        return
    dumps = json.dumps
    session.execute(
        sa.text(
            "INSERT INTO queue_samples (queue, time, allocated, deserved, capability, guarantee, "
            "pending, running, share) "
            "SELECT q, t, CAST(a AS jsonb), CAST(d AS jsonb), CAST(c AS jsonb), CAST(g AS jsonb), p, r, s "
            "FROM unnest(CAST(:q AS text[]), CAST(:t AS timestamptz[]), CAST(:a AS text[]), "
            "CAST(:d AS text[]), CAST(:c AS text[]), CAST(:g AS text[]), CAST(:p AS int[]), "
            "CAST(:r AS int[]), CAST(:s AS float8[])) AS x(q, t, a, d, c, g, p, r, s) "
            "ON CONFLICT (queue, time) DO UPDATE SET allocated = EXCLUDED.allocated, "
            "deserved = EXCLUDED.deserved, capability = EXCLUDED.capability, guarantee = EXCLUDED.guarantee, "
            "pending = EXCLUDED.pending, running = EXCLUDED.running, share = EXCLUDED.share"
        ),
        {
            "q": [s.queue for s in samples],
            "t": [s.time for s in samples],
            "a": [dumps(s.allocated) for s in samples],
            "d": [dumps(s.deserved) for s in samples],
            "c": [dumps(s.capability) for s in samples],
            "g": [dumps(s.guarantee) for s in samples],
            "p": [s.pending for s in samples],
            "r": [s.running for s in samples],
            "s": [s.share for s in samples],
        },
    )


def read(
    *, session: Session, since: datetime, until: datetime, queues: Sequence[str] | None
) -> list[QueueSample]:
    """Samples in [since, until), by queue then time; ``queues`` None: every queue."""
    c = queue_samples.c
    stmt = sa.select(queue_samples).where(c.time >= since, c.time < until)
    if queues is not None:
        stmt = stmt.where(c.queue.in_(list(queues)))
    rows = session.execute(stmt.order_by(c.queue, c.time)).all()
    return [
        QueueSample(
            r.queue, r.time, r.allocated, r.deserved, r.capability, r.guarantee, r.pending, r.running, r.share
        )
        for r in rows
    ]


def last_time(*, session: Session) -> datetime | None:
    """When the latest sample was taken (of any queue)."""
    return session.execute(sa.select(sa.func.max(queue_samples.c.time))).scalar_one_or_none()


def prune(before: datetime, *, session: Session, batch: int) -> int:
    """Delete at most ``batch`` samples taken before ``before``, oldest first; returns how many."""
    res = session.execute(
        sa.text(
            "DELETE FROM queue_samples WHERE (queue, time) IN ("
            "  SELECT queue, time FROM queue_samples WHERE time < :before ORDER BY time LIMIT :n)"
        ),
        {"before": before, "n": batch},
    )
    return rowcount(res)
