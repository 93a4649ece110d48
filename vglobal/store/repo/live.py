"""The dispatcher's reads of unfinished bindings: all of them, those written since a read, or some
by uid. Read on the driver's cursor: these are the dispatcher's hot path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import psycopg
from sqlalchemy.orm import Session

from vglobal.model.binding import UNFINISHED, values


class LiveBinding(NamedTuple):
    """The per-cycle changing part of an unfinished binding (the job's own fields never change).

    A NamedTuple: the dispatcher reads one per unfinished job every cycle, and the driver's rows
    become these without a Python-level constructor call.
    """

    job_uid: str
    phase: str
    cluster: str | None
    waiting_since: float  # epoch seconds
    excluded_clusters: dict[str, float] | None  # cluster -> excluded until (epoch seconds)
    placements: list[dict[str, Any]] | None  # reported pods (PodPlacement JSON), for running jobs only
    dispatched_at: float | None  # epoch seconds of the current admission, for admitted jobs
    evictions: list[str] | None = None  # pod uids of the run its agent is to evict (preemption)
    checkpointed_at: float | None = None  # epoch seconds its current run last saved its work


class Written(NamedTuple):
    """The bindings a write of this hub changed, as it left them, and the transactions that wrote
    them: their row versions, which a later ``changed_since`` may skip, since the caller holds
    them already."""

    rows: list[LiveBinding]
    xids: set[int]  # 32-bit transaction ids, as a row's xmin holds them


NOTHING_WRITTEN = Written([], set())
UNFINISHED_PHASES = values(UNFINISHED)
# As the partial indexes of migration 0007 spell them: the planner uses an index only for a
# condition that is the index's own.
UNFINISHED_SQL = "phase IN ('Suspended', 'Dispatched', 'Bound', 'Running')"
FINISHED_SQL = "phase IN ('Succeeded', 'Failed', 'Aborted')"
assert sorted(UNFINISHED_PHASES) == sorted(UNFINISHED_SQL[10:-1].replace("'", "").split(", "))

BINDING_COLUMNS = (
    "b.job_uid, b.phase, b.cluster, CAST(extract(epoch FROM b.waiting_since) AS float8), "
    "NULLIF(b.excluded_clusters, '{}'::jsonb)"
)
DISPATCHED_AT = "CAST(extract(epoch FROM b.dispatched_at) AS float8)"
EVICTIONS = "NULLIF(b.evictions, '[]'::jsonb)"
CHECKPOINTED = "CAST(extract(epoch FROM b.checkpointed_at) AS float8)"
XMIN = "CAST(CAST(b.xmin AS text) AS bigint)"  # the writing transaction, 32-bit as rows hold it
_LIVE_COLUMNS = (
    f"{BINDING_COLUMNS}, CASE WHEN b.phase = 'Running' THEN NULLIF(j.placements, '[]'::jsonb) END, "
    f"{DISPATCHED_AT}, {EVICTIONS}, {CHECKPOINTED}"
)


# Rows per round trip of a streamed read: a chunk is decoded holding the interpreter, so it bounds
# how long the hub's other threads (its API) wait on a big read.
STREAM_CHUNK = 2000


def cursor(session: Session) -> psycopg.Cursor[Any]:
    raw = session.connection().connection.dbapi_connection
    assert isinstance(raw, psycopg.Connection)
    return raw.cursor()


def live(*, session: Session) -> list[LiveBinding]:
    """Every unfinished binding."""
    sql = (
        f"SELECT {_LIVE_COLUMNS} FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid "
        f"WHERE b.{UNFINISHED_SQL}"
    )
    with cursor(session) as cur:
        # Streamed in chunks: a driver's fetch of every row holds the interpreter (and the hub's
        # API threads) for the whole decoding.
        return list(map(LiveBinding._make, cur.stream(sql, size=STREAM_CHUNK)))


def of_jobs(uids: Sequence[str], *, session: Session) -> list[LiveBinding]:
    """These jobs' bindings, in any phase (a deleted job's is missing)."""
    if not uids:
        return []
    with cursor(session) as cur:
        cur.execute(
            f"SELECT {_LIVE_COLUMNS} FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid "
            "WHERE b.job_uid = ANY(%(uids)s)",
            {"uids": list(uids)},
        )
        rows = cur.fetchall()
    return list(map(LiveBinding._make, rows))


class Horizon(NamedTuple):
    """Where a read of the bindings stood: what a later ``changed_since`` starts from."""

    xid: int  # the oldest transaction the read might not see (64-bit, never wraps)
    since: float  # epoch seconds: no transaction the read might not see started earlier


def read_horizon(*, session: Session) -> Horizon:
    """The horizon of a read starting now (in the caller's transaction, before the read).

    Every change a later read misses was made by a transaction at or above ``xid``, which was
    running now or started later: so it started at or after ``since``, the start of the oldest
    transaction running now (the caller's own among them), and a binding it finished has a finish
    time (its transaction's start) at or after it.
    """
    with cursor(session) as cur:
        cur.execute(
            # Client backends only: autovacuum writes no finish times, and runs long.
            "SELECT CAST(extract(epoch FROM (SELECT min(xact_start) FROM pg_stat_activity "
            "  WHERE datname = current_database() AND backend_type = 'client backend')) AS float8), "
            "CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)"
        )
        row = cur.fetchone()
    assert row is not None
    return Horizon(int(row[1]), float(row[0]))


def changed_since(
    horizon: Horizon, *, session: Session, skip: Sequence[int] = ()
) -> tuple[list[LiveBinding], int]:
    """Bindings written by a transaction at or above ``horizon`` (in any phase, so finished ones
    can be dropped), and how many bindings are unfinished now. A change of a job's placements
    touches its binding (migrations 0002, 0016), so the job rows need not be looked at. Rows whose
    current version was written by a transaction in ``skip`` are left out (the caller wrote them
    and knows them: see ``bindings.set_reasons``); a later write gives a row another ``xmin``.

    Only unfinished bindings and those finished since the horizon are looked at (the indexes of
    migration 0007), so the cost follows what is live and what changed, never the finished
    history. A row's ``xmin`` is the transaction that wrote its current version; ``age()``
    compares those 32-bit ids modulo wraparound (a frozen row is as old as can be). Both results
    come from one statement, so they describe the same moment: a caller whose count then differs
    missed a deleted row, or a finish.
    """
    with cursor(session) as cur:
        cur.execute(
            # The changed uids (and the count) are collected first; the rows are then fetched by
            # key. A join on the changed set would be planned for far more rows.
            "WITH edge AS (SELECT age(xid(CAST(CAST(%(h)s AS text) AS xid8))) AS a), "
            "live AS MATERIALIZED (SELECT count(*) AS n, "
            "  coalesce(array_agg(job_uid) FILTER (WHERE age(xmin) <= (SELECT a FROM edge) "
            "    AND NOT xmin = ANY(CAST(%(skip)s AS xid[]))), '{}') AS ids "
            f"  FROM resource_bindings WHERE {UNFINISHED_SQL}), "
            "ended AS MATERIALIZED (SELECT coalesce(array_agg(job_uid), '{}') AS ids "
            f"  FROM resource_bindings WHERE {FINISHED_SQL} AND finished_at >= to_timestamp(%(since)s) "
            "  AND age(xmin) <= (SELECT a FROM edge) AND NOT xmin = ANY(CAST(%(skip)s AS xid[]))) "
            f"SELECT live.n, c.* FROM live CROSS JOIN ended LEFT JOIN LATERAL (SELECT {_LIVE_COLUMNS} "
            "FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid "
            "WHERE b.job_uid = ANY(live.ids || ended.ids)) c ON true",
            {"h": horizon.xid, "since": horizon.since, "skip": [str(x) for x in skip]},
        )
        rows = cur.fetchall()
    count = int(rows[0][0])
    return [LiveBinding._make(r[1:]) for r in rows if r[1] is not None], count
