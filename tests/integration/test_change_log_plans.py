"""The job change log's triggers must not scan whole tables for a statement's few rows.

A database whose tables grew since their last ANALYZE (a new install, the first minute of a
burst) has no statistics; the triggers' lookups into jobs and resource_bindings must still go by
key, or every small status write costs a scan of every job (5 to 7 ms at 20,000 jobs).
"""

from __future__ import annotations

import psycopg

from vglobal.hub.server import libpq_dsn

JOBS = """
INSERT INTO jobs (uid, namespace, name, queue, priority, min_available, request, gang, pod_requests,
    placement, manifest, tasks, facts)
SELECT 'u' || g, 'default', 'n' || g, 'q', 0, 1, '{}', '[]', '{}', '{}', '{}', '[]', '{}'
FROM generate_series(%(lo)s::int, %(hi)s::int) AS g
"""
BINDINGS = """
INSERT INTO resource_bindings (job_uid, resources)
SELECT 'u' || g, '{}' FROM generate_series(%(lo)s::int, %(hi)s::int) AS g
"""


def _grow(conn: psycopg.Connection[tuple[object, ...]], lo: int, hi: int) -> None:
    conn.execute(JOBS, {"lo": lo, "hi": hi})
    conn.execute(BINDINGS, {"lo": lo, "hi": hi})


def test_small_writes_to_grown_tables_without_statistics_scan_nothing_whole(database_url: str) -> None:
    with psycopg.connect(libpq_dsn(database_url), autocommit=True) as conn:
        conn.execute("INSERT INTO queues (name, manifest) VALUES ('q', '{}')")
        _grow(conn, 1, 20)
        for k in range(5):  # plans made while the tables are tiny
            conn.execute("UPDATE jobs SET phase = %s WHERE uid = ANY(%s)", (f"P{k}", ["u1", "u2"]))
            conn.execute(
                "UPDATE resource_bindings SET reason = %s WHERE job_uid = ANY(%s)", (f"r{k}", ["u1"])
            )
        _grow(conn, 21, 5000)  # no ANALYZE: the planner has no idea of 5,000 rows
        with conn.transaction():
            for k in range(20):
                uids = [f"u{100 + 5 * k + i}" for i in range(5)]
                conn.execute("UPDATE jobs SET phase = 'Running' WHERE uid = ANY(%s)", (uids,))
                conn.execute("UPDATE resource_bindings SET reason = 'x' WHERE job_uid = ANY(%s)", (uids,))
            logged = conn.execute("SELECT count(*) FROM job_changes WHERE job_uid LIKE 'u1__'").fetchone()
            scans = dict(
                conn.execute(
                    "SELECT relname, seq_scan FROM pg_stat_xact_user_tables "
                    "WHERE relname IN ('jobs', 'resource_bindings')"
                ).fetchall()
            )
    assert logged is not None and logged[0] >= 100  # the triggers did log the writes
    assert scans == {"jobs": 0, "resource_bindings": 0}


def test_a_report_touches_the_bindings_of_changed_placements_in_one_statement(database_url: str) -> None:
    """The dispatcher sees a job's new placements through its binding's row version (migration
    0016): a multi-row report touches exactly the bindings whose placements changed, by key."""
    with psycopg.connect(libpq_dsn(database_url), autocommit=True) as conn:
        conn.execute("INSERT INTO queues (name, manifest) VALUES ('q', '{}')")
        _grow(conn, 1, 3000)  # no ANALYZE
        conn.execute("SET track_functions = 'pl'")  # calls of trigger functions, per transaction
        with conn.transaction():
            conn.execute(
                "UPDATE jobs SET placements = CASE WHEN uid IN ('u1', 'u2') "
                "THEN '[{\"pod\": \"p\", \"task\": \"t\", \"node\": \"n\"}]'::jsonb ELSE placements END, "
                "phase = 'Running' WHERE uid = ANY(%s)",
                (["u1", "u2", "u3"],),
            )
            scans = conn.execute(
                "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'resource_bindings'"
            ).fetchone()
            calls = dict(
                conn.execute("SELECT funcname, calls FROM pg_stat_xact_user_functions").fetchall()
            )
            me = conn.execute("SELECT CAST(CAST(pg_current_xact_id() AS text) AS bigint)").fetchone()
            touched = conn.execute(  # (this look scans: it comes after the count above)
                "SELECT job_uid FROM resource_bindings WHERE CAST(CAST(xmin AS text) AS bigint) = %s "
                "ORDER BY job_uid",
                (me[0] if me else None,),
            ).fetchall()
    assert [t[0] for t in touched] == ["u1", "u2"]  # u3's placements did not change
    assert scans == (0,)
    # One touch for the statement, and the bindings' own triggers once for it, not once per job.
    assert calls["touch_bindings_on_placements"] == 1
    assert calls["job_counts_bindings_changed"] == 1
