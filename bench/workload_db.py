"""The benchmarks' workload (workload.py) in Postgres, and what happens to it between cycles.

`seed` writes a Snapshot's queues, clusters, jobs and bindings with COPY (setup, not timed);
`reset` brings the database back to that state. Between the hub's cycles the agents start what was
dispatched (`agents_start_dispatched`), running jobs finish (`finish`) and users submit more
(`submit_copies`).
"""

from __future__ import annotations

import io
import json
import time

import sqlalchemy as sa
from workload import first_fit

from vglobal.admission import ClusterSnap, NodeSnap, RunningJob, Snapshot
from vglobal.model.resources import ResourceVector


def _copy(conn: sa.Connection, table: str, columns: list[str], rows: list[list[object]]) -> None:
    """COPY rows in text format (setup only; not timed)."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    buf = io.StringIO()
    for r in rows:
        buf.write("\t".join("\\N" if v is None else str(v).replace("\\", "\\\\") for v in r) + "\n")
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:  # type: ignore[attr-defined]
        cp.write(buf.getvalue())


def _units(v: object) -> str:
    return json.dumps(dict(v.items()))  # type: ignore[attr-defined]


def _queue_rows(snap: Snapshot) -> list[list[object]]:
    return [
        [
            q.name,
            q.parent,
            q.weight,
            _units(q.capability) if q.capability else None,
            _units(q.guarantee),
            "{}",
        ]
        for q in snap.queues
    ]


def _cluster_rows(snap: Snapshot) -> list[list[object]]:
    return [
        [
            c.name,
            json.dumps(dict(c.labels)),
            json.dumps(
                [{"name": n.name, "labels": {}, "allocatable": dict(n.allocatable.items())} for n in c.nodes]
            ),
            json.dumps({n.name: dict(n.free.items()) for n in c.nodes}),
        ]
        for c in snap.clusters
    ]


_JOB_COLUMNS = [
    "uid",
    "namespace",
    "name",
    "queue",
    "priority",
    "min_available",
    "request",
    "gang",
    "pod_requests",
    "placement",
    "manifest",
    "tasks",
    "created_at",
    "facts",  # of the empty manifest each seeded job has: none
]


def _job_rows(snap: Snapshot) -> list[list[object]]:
    """Pending and running jobs alike; running ones are single pods."""
    # The workload's times are relative to its own clock: moved to the database's, so jobs
    # submitted later in the run are newer than the seeded ones, as in a real hub.
    shift = time.time() - snap.now
    rows: list[list[object]] = []
    for j in snap.pending:
        placement = {"clusters": None, "selector": dict(j.cluster_selector), "topology": None}
        rows.append(
            [
                j.uid,
                j.namespace,
                j.name,
                j.queue,
                j.priority,
                sum(c for _, c in j.gang),
                _units(j.request),
                json.dumps([[dict(r.items()), c] for r, c in j.gang]),
                "{}",
                json.dumps(placement),
                "{}",
                "[]",
                time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(j.created + shift)),
                "{}",
            ]
        )
    for r in snap.running:
        rows.append(
            [
                r.uid,
                "bench",
                r.uid,
                r.queue,
                r.priority,
                1,
                _units(r.request),
                json.dumps([[dict(r.request.items()), 1]]),
                "{}",
                json.dumps({"clusters": None, "selector": {}, "topology": None}),
                "{}",
                "[]",
                time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(r.created + shift)),
                "{}",
            ]
        )
    return rows


def seed(engine: sa.Engine, snap: Snapshot) -> None:
    """The snapshot's queues, clusters and jobs; every job a binding, the running ones Running."""
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM queues WHERE name <> 'default'"))
        _copy(
            conn,
            "queues",
            ["name", "parent", "weight", "capability", "guarantee", "manifest"],
            _queue_rows(snap),
        )
        _copy(conn, "clusters", ["name", "labels", "nodes", "free"], _cluster_rows(snap))
        _copy(conn, "jobs", _JOB_COLUMNS, _job_rows(snap))
        conn.execute(
            sa.text("INSERT INTO resource_bindings (job_uid, resources) SELECT uid, request FROM jobs")
        )
        conn.execute(
            sa.text(
                "UPDATE resource_bindings b SET phase = 'Running', cluster = d.cluster, generation = 1 "
                "FROM unnest(CAST(:u AS text[]), CAST(:c AS text[])) AS d(uid, cluster) WHERE b.job_uid = d.uid"
            ),
            {"u": [r.uid for r in snap.running], "c": [r.cluster for r in snap.running]},
        )
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("VACUUM ANALYZE"))


_JOB_COPY = (
    "INSERT INTO jobs (uid, namespace, name, queue, priority, min_available, request, gang, pod_requests, "
    "placement, manifest, tasks, created_at, facts) "
    "SELECT uid || :tag, namespace, name || :tag, queue, priority, min_available, request, gang, "
    "pod_requests, placement, manifest, tasks, now(), facts FROM jobs WHERE uid = ANY(:uids)"
)


def submit_copies(engine: sa.Engine, uids: list[str], tag: str) -> None:
    """New jobs shaped like these (new uid and name), each with a Suspended binding (not timed)."""
    with engine.begin() as conn:
        conn.execute(sa.text(_JOB_COPY), {"tag": tag, "uids": uids})
        conn.execute(
            sa.text(
                "INSERT INTO resource_bindings (job_uid, resources) SELECT uid, request FROM jobs "
                "WHERE uid = ANY(:new)"
            ),
            {"new": [u + tag for u in uids]},
        )


def agents_start_dispatched(engine: sa.Engine) -> int:
    """What the agents report between two cycles: the pods of every dispatched job now run, so
    they leave the hub's estimate and show in their nodes' free capacity (not timed). They are
    placed first-fit in the hub's order, as the hub estimated them; returns how many started."""
    with engine.begin() as conn:
        rows = conn.execute(sa.text("SELECT name, nodes, free FROM clusters ORDER BY name")).all()
        started = conn.execute(
            sa.text(
                "UPDATE resource_bindings b SET phase = 'Running' FROM jobs j "
                "WHERE j.uid = b.job_uid AND b.phase = 'Dispatched' RETURNING b.cluster, j.gang"
            )
        ).all()
        gangs: dict[str, list[tuple[tuple[ResourceVector, int], ...]]] = {}
        for cluster, gang in started:
            gangs.setdefault(cluster, []).append(tuple((ResourceVector(u), int(n)) for u, n in gang))
        snaps = [
            ClusterSnap(
                name,
                {},
                tuple(
                    NodeSnap(
                        n["name"], ResourceVector(free.get(n["name"], {})), ResourceVector(n["allocatable"])
                    )
                    for n in sorted(nodes, key=lambda n: n["name"])
                ),
                unplaced=tuple(gangs.get(name, ())),
            )
            for name, nodes, free in rows
        ]
        extra = {r for gs in gangs.values() for g in gs for vec, _ in g for r in vec}
        index, clusters, prepare = first_fit(snaps, extra)
        clusters.take_unplaced(prepare)
        for c, snap in enumerate(clusters.snaps):
            free = {n.name: dict(index.vector(clusters.rows[c][i]).items()) for i, n in enumerate(snap.nodes)}
            conn.execute(
                sa.text("UPDATE clusters SET free = CAST(:f AS jsonb) WHERE name = :n"),
                {"f": json.dumps(free), "n": snap.name},
            )
    return len(started)


def finish(engine: sa.Engine, jobs: list[RunningJob]) -> None:
    """These running jobs finish: their bindings succeed and their nodes get the room back."""
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE resource_bindings SET phase = 'Succeeded', finished_at = now() WHERE job_uid = ANY(:u)"
            ),
            {"u": [j.uid for j in jobs]},
        )
        for name, nodes in conn.execute(sa.text("SELECT name, free FROM clusters")).all():
            for j in jobs:
                if j.cluster != name:
                    continue
                for node, vec in j.placements.items():
                    nodes[node] = dict(ResourceVector(nodes.get(node, {})) + vec)
            conn.execute(
                sa.text("UPDATE clusters SET free = CAST(:f AS jsonb) WHERE name = :n"),
                {"f": json.dumps(nodes), "n": name},
            )


def reset(engine: sa.Engine, snap: Snapshot) -> None:
    """Back to the seeded state: copies of jobs deleted, the seeded running jobs running on their
    nodes' seeded free capacity, every other binding Suspended."""
    running = [r.uid for r in snap.running]
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM jobs WHERE uid LIKE '%-again%' OR uid LIKE '%-churn%'"))
        conn.execute(
            sa.text(
                "UPDATE resource_bindings SET phase = CASE WHEN job_uid = ANY(:running) THEN 'Running' "
                "ELSE 'Suspended' END, cluster = CASE WHEN job_uid = ANY(:running) THEN cluster END, "
                "generation = CASE WHEN job_uid = ANY(:running) THEN generation ELSE 0 END, reason = ''"
            ),
            {"running": running},
        )
        for c in snap.clusters:
            conn.execute(
                sa.text("UPDATE clusters SET free = CAST(:f AS jsonb) WHERE name = :n"),
                {"f": json.dumps({n.name: dict(n.free.items()) for n in c.nodes}), "n": c.name},
            )
        conn.execute(sa.text("DELETE FROM events"))
        conn.execute(sa.text("UPDATE queues SET status = '{}'"))
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("VACUUM ANALYZE"))
