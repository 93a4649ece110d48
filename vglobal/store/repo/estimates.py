"""Predicted starts of waiting jobs (table job_estimates), written by the leader's forecast loop
and read with the jobs they belong to."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.store.tables import job_estimates, jobs, resource_bindings


@dataclass(frozen=True)
class EstimateRow:
    start: float | None  # epoch seconds; None = the forecast cannot tell
    cluster: str
    ahead: int
    computed_at: float


# One statement for the whole forecast: rows whose estimate moved are upserted, every other kept.
_UPSERT = sa.text(
    "INSERT INTO job_estimates (job_uid, start, cluster, ahead, computed_at) "
    "SELECT d.uid, d.start, d.cluster, d.ahead, :at "
    "FROM unnest(CAST(:uids AS text[]), CAST(:starts AS float8[]), CAST(:clusters AS text[]), "
    "CAST(:aheads AS int[])) AS d(uid, start, cluster, ahead) "
    "JOIN jobs j ON j.uid = d.uid "  # a job deleted meanwhile gets no row
    "ON CONFLICT (job_uid) DO UPDATE SET start = excluded.start, cluster = excluded.cluster, "
    "ahead = excluded.ahead, computed_at = excluded.computed_at"
)


def write(
    rows: Mapping[str, tuple[float | None, str, int]],
    gone: Iterable[str],
    computed_at: float,
    *,
    session: Session,
) -> None:
    """Upsert ``rows`` (uid -> start, cluster, ahead) and drop the estimates of ``gone`` uids."""
    if rows:
        uids = list(rows)
        session.execute(
            _UPSERT,
            {
                "uids": uids,
                "starts": [rows[u][0] for u in uids],
                "clusters": [rows[u][1] for u in uids],
                "aheads": [rows[u][2] for u in uids],
                "at": computed_at,
            },
        )
    dropped = list(gone)
    if dropped:
        session.execute(sa.delete(job_estimates).where(job_estimates.c.job_uid.in_(dropped)))


def touch(computed_at: float, *, session: Session) -> None:
    """Every estimate was computed again at ``computed_at`` (those that did not move included)."""
    session.execute(sa.update(job_estimates).values(computed_at=computed_at))


def for_uids(uids: Sequence[str], *, session: Session) -> dict[str, EstimateRow]:
    if not uids:
        return {}
    q = sa.select(job_estimates).where(job_estimates.c.job_uid.in_(list(uids)))
    return {r.job_uid: EstimateRow(r.start, r.cluster, r.ahead, r.computed_at) for r in session.execute(q)}


def run_times(limit: int, *, session: Session) -> list[tuple[str, str, float]]:
    """(queue, name, seconds run) of the last ``limit`` jobs that completed, newest first."""
    q = (
        sa.select(
            jobs.c.queue,
            jobs.c.name,
            sa.extract("epoch", resource_bindings.c.finished_at - resource_bindings.c.dispatched_at),
        )
        .select_from(jobs.join(resource_bindings, resource_bindings.c.job_uid == jobs.c.uid))
        .where(
            jobs.c.phase == "Completed",
            resource_bindings.c.finished_at.is_not(None),
            resource_bindings.c.dispatched_at.is_not(None),
        )
        .order_by(resource_bindings.c.finished_at.desc())
        .limit(limit)
    )
    return [(r[0], r[1], float(r[2])) for r in session.execute(q)]


def hints(uids: Sequence[str], *, session: Session) -> dict[str, tuple[str | None, Any]]:
    """Per job: its ``vglobal.io/expected-duration`` annotation and ``spec.activeDeadlineSeconds``
    (read inside Postgres: the manifests do not travel)."""
    if not uids:
        return {}
    m = jobs.c.manifest
    q = sa.select(
        jobs.c.uid,
        m["metadata"]["annotations"]["vglobal.io/expected-duration"].astext,
        m["spec"]["activeDeadlineSeconds"].astext,
    ).where(jobs.c.uid.in_(list(uids)))
    return {r[0]: (r[1], r[2]) for r in session.execute(q)}
