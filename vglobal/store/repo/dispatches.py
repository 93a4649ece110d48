"""A job's dispatch history: one row per generation of its binding, written by the trigger of
migration 0009 whenever a binding is admitted or leaves the admitted phases."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.records import DispatchRow
from vglobal.store.tables import job_dispatches


def of_job(job_uid: str, *, session: Session) -> list[DispatchRow]:
    """Oldest first."""
    d = job_dispatches.c
    rows = session.execute(
        sa.select(d.generation, d.cluster, d.dispatched_at, d.ended_at, d.outcome, d.fenced, d.reason)
        .where(d.job_uid == job_uid)
        .order_by(d.generation)
    ).all()
    return [DispatchRow(int(r[0]), r[1], r[2], r[3], r[4], bool(r[5]), r[6]) for r in rows]
