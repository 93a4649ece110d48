"""Finished history for bench/e2e.py: copies of a job that ran, stored straight in Postgres as
finished a few days ago (inside the default --finished-job-ttl of 7 days), with its binding and
three events each, as a hub that ran them would have left them."""

from __future__ import annotations

import time

import psycopg

CHUNK = 50_000

JOBS = """
INSERT INTO jobs (uid, namespace, name, request_id, queue, priority_class_name, priority, min_available,
    request, gang, pod_requests, placement, manifest, phase, retry_count, tasks, placements,
    created_at, updated_at, finished_at, facts)
SELECT 'hist-' || g, t.namespace, 'hist-' || g, 'hist-' || g, t.queue, t.priority_class_name, t.priority,
    t.min_available, t.request, t.gang, t.pod_requests, t.placement,
    jsonb_set(t.manifest, '{metadata,name}', to_jsonb('hist-' || g)), 'Completed', 0, t.tasks,
    t.placements, now() - interval '3 days' - g * interval '100 ms',
    now() - interval '3 days' - g * interval '100 ms' + interval '2 s',
    now() - interval '3 days' - g * interval '100 ms' + interval '2 s', t.facts
FROM generate_series(%(lo)s, %(hi)s) AS g, (SELECT * FROM jobs WHERE uid = %(uid)s) AS t
"""

BINDINGS = """
INSERT INTO resource_bindings (job_uid, phase, cluster, generation, resources, attempts, reason,
    waiting_since, dispatched_at, finished_at, updated_at)
SELECT 'hist-' || g, 'Succeeded', t.cluster, 1, t.resources, 0, 'job Completed',
    j.created_at, j.created_at + interval '100 ms', j.finished_at, j.finished_at
FROM generate_series(%(lo)s, %(hi)s) AS g
JOIN jobs j ON j.uid = 'hist-' || g,
    (SELECT * FROM resource_bindings WHERE job_uid = %(uid)s) AS t
"""

EVENTS = """
INSERT INTO events (time, job_uid, cluster, kind, reason, message, source)
SELECT j.created_at + e.after, j.uid, e.cluster, 'Normal', e.reason, e.message, e.source
FROM generate_series(%(lo)s, %(hi)s) AS g
JOIN jobs j ON j.uid = 'hist-' || g,
    (VALUES (interval '0', NULL, 'Submitted', 'queue default, 1 pods', 'hub'),
            (interval '100 ms', 'c0', 'Dispatched', 'admitted to cluster c0 (generation 1)', 'hub'),
            (interval '2 s', 'c0', 'JobCompleted', 'Running -> Completed', 'agent/c0'))
    AS e(after, cluster, reason, message, source)
"""


def seed_finished(url: str, rows: int) -> None:
    """``rows`` finished copies of a job that succeeded, in chunks, then VACUUM ANALYZE (their watch
    log entries removed, as the change log would have pruned them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT job_uid FROM resource_bindings WHERE phase = 'Succeeded' LIMIT 1"
        ).fetchone()
        if found is None:
            raise RuntimeError("no job has succeeded yet: nothing to copy")
        uid = found[0]
        for lo in range(0, rows, CHUNK):
            t = time.time()
            params = {"lo": lo, "hi": min(rows, lo + CHUNK) - 1, "uid": uid}
            with conn.transaction():
                for sql in (JOBS, BINDINGS, EVENTS):
                    conn.execute(sql, params)
            print(f"  seeded {min(rows, lo + CHUNK):,} finished jobs ({time.time() - t:.1f} s)", flush=True)
        # Their changes left the watch log long ago (--watch-keep-for); the triggers logged them
        # now, and numbering 2M changes at once would be measured as the history's cost.
        # The hub's change log numbers these rows meanwhile: a deadlock with it is retried.
        for attempt in range(5):
            try:
                conn.execute("DELETE FROM job_changes WHERE job_uid LIKE 'hist-%'")
                break
            except psycopg.errors.DeadlockDetected:
                if attempt == 4:
                    raise
                time.sleep(1)
        conn.execute("VACUUM ANALYZE job_changes")
        conn.execute("VACUUM ANALYZE jobs")
        conn.execute("VACUUM ANALYZE resource_bindings")
        conn.execute("VACUUM ANALYZE events")
