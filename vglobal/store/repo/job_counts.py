"""Job counts from the counts table that triggers keep (migration 0011), for every filter the
table holds (queue, namespace, phase, cluster, finish time); any other filter counts the rows.
A count of jobs finished since T adds T's later hours from the table and counts the rest of
T's own hour from the finish-time index, in the same statement (one snapshot)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.binding import ADMITTED, FINISHED, values
from vglobal.store.repo.job_queries import (
    BINDING_PHASES,
    GROUP_KEYS,
    JOB_PHASES,
    JobFilter,
    count_statement,
    grouped_rows,
)
from vglobal.store.tables import job_counts, resource_bindings

_c = job_counts.c
_COLUMNS: dict[str, Any] = {
    "phase": _c.phase,
    "binding_phase": _c.binding_phase,
    "queue": _c.queue,
    "cluster": _c.cluster,
    "namespace": _c.namespace,
}


def countable(f: JobFilter) -> bool:
    """Whether the table holds every filter of ``f``."""
    return not (
        f.labels
        or f.owner_uid
        or f.name_contains
        or f.submitted_by
        or f.created_after is not None
        or f.created_before is not None
    )


def _hour(t: datetime) -> int:
    aware = t if t.tzinfo else t.replace(tzinfo=UTC)
    return int(aware.timestamp() // 3600)


def _conditions(f: JobFilter, joined: bool) -> list[sa.ColumnElement[bool]]:
    out: list[sa.ColumnElement[bool]] = []
    if joined:
        out.append(_c.binding_phase != "")  # the rows' join with their binding is an inner one
    if f.queue:
        out.append(_c.queue == f.queue)
    if f.queues is not None:
        out.append(_c.queue.in_(list(f.queues)))
    if f.namespace:
        out.append(_c.namespace == f.namespace)
    if f.phase:
        sides = [
            c == f.phase
            for c, names in ((_c.phase, JOB_PHASES), (_c.binding_phase, BINDING_PHASES))
            if f.phase in names
        ]
        out.append(sa.or_(*sides) if sides else sa.false())
    if f.cluster:
        out.append(_c.cluster == f.cluster)
    if f.finished_after is not None:
        out.append(_c.binding_phase.in_(values(FINISHED)))
        out.append(_c.finished_hour > _hour(f.finished_after))
    return out


def count_jobs(
    f: JobFilter, group_by: Sequence[str], *, session: Session
) -> list[tuple[tuple[str, ...], int]]:
    """(the group's values in ``group_by`` order, its count) per group, ordered by the values."""
    if not countable(f):
        return grouped_rows(count_statement(f, group_by), len(group_by), session=session)
    joined = f.needs_binding() or any(GROUP_KEYS[g][1] for g in group_by)
    cols = [_COLUMNS[g].label(f"g{i}") for i, g in enumerate(group_by)]
    parts: list[sa.Select[Any]] = [sa.select(*cols, _c.n.label("n")).where(*_conditions(f, joined))]
    if f.finished_after is not None:
        # The rest of the hour T falls in, counted row by row.
        edge = datetime.fromtimestamp((_hour(f.finished_after) + 1) * 3600, UTC)
        scan = count_statement(f, group_by, [resource_bindings.c.finished_at < edge], ordered=False)
        parts.append(scan)
    both = sa.union_all(*parts).subquery("parts")
    group = [both.c[f"g{i}"] for i in range(len(group_by))]
    stmt = sa.select(*group, sa.func.sum(both.c.n)).group_by(*group).order_by(*group)
    if group:  # ungrouped, a count is one row even when it is 0
        stmt = stmt.having(sa.func.sum(both.c.n) > 0)
    return [(tuple(r[:-1]), int(r[-1] or 0)) for r in session.execute(stmt).all()]


def compact(*, session: Session) -> int:
    """Folds every key's rows into one (dropping keys that sum to none), in one statement;
    returns how many rows the table held before. Rows appended meanwhile stay for the next."""
    rows = session.execute(
        sa.text(
            "WITH gone AS (DELETE FROM job_counts RETURNING *), "
            "folded AS (INSERT INTO job_counts (queue, namespace, phase, binding_phase, cluster, "
            "finished_hour, n) SELECT queue, namespace, phase, binding_phase, cluster, finished_hour, "
            "sum(n) FROM gone GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0) "
            "SELECT count(*) FROM gone"
        )
    ).scalar_one()
    return int(rows)


def rebuild(*, session: Session) -> None:
    """Counts every job again: after a bulk load with triggers off."""
    session.execute(sa.text("SELECT rebuild_job_counts()"))


def queue_counts(*, session: Session) -> dict[str, tuple[int, int]]:
    """Per queue: its waiting (Suspended) and admitted, unfinished jobs."""
    pending = sa.func.sum(_c.n).filter(_c.binding_phase == "Suspended")
    running = sa.func.sum(_c.n).filter(_c.binding_phase.in_(values(ADMITTED)))
    rows = session.execute(
        sa.select(_c.queue, pending, running)
        .where(_c.binding_phase.in_(["Suspended", *values(ADMITTED)]))
        .group_by(_c.queue)
    ).all()
    return {r[0]: (int(r[1] or 0), int(r[2] or 0)) for r in rows}
