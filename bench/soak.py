"""A soak: a steady rate of mixed short jobs through a hub, simulated agents and PostgreSQL, with
retention on, for --minutes; per minute the submit latency, the submit->Running latency, the
resident memory of hub and agents and the database's size; at the end, nothing lost or run twice
(from the agents' own logs) and a PASS/FAIL line.

    .venv/bin/python bench/soak.py --minutes 60 --rate 200 [--ttl 60] [--warmup 16] [--keep DIR]

Processes (bench/e2e_procs.py): an embedded PostgreSQL, `vglobal hub --finished-job-ttl TTL`,
--clusters simulated agents of 50 nodes x 110 pod slots, and three open-loop load generators
(bench/e2e_load.py, SubmitJob calls due at a fixed rate whatever the hub's speed; latency counts
from when a call was due) sharing --rate: 40 % of jobs run 1 s, 40 % 3 s, 20 % 10 s. Every 10 s the
bench reads the jobs that finished since its last look (their JobRunning event and binding phase)
before retention removes them. With --probe-every S (default 5), the load's jobs are pinned to
the clusters c0..; one more cluster, "probe", stays idle, and every S seconds a probe job pinned to
it measures submit->Running on a cluster with room while the hub is busy. What is kept for a while grows until its window is full: agents keep
finished runs 10 minutes, the hub's watch log 15 (--watch-keep-for), hence the warm-up. Pass: 0 lost, 0 run twice; after --warmup minutes the RSS of hub
and of each agent and the database size grow less than 10 % (first minute after warm-up against
the last); the last minute's p99 submit and submit->Running latencies within 2x the first minute's
after warm-up (or under 50 ms and 1 s). The figure per day is the completed rate times 86,400.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from e2e_load import MANIFEST  # noqa: E402
from e2e_procs import CODE, Postgres, Proc, System, spawn  # noqa: E402

from tests.e2e.chaos import runs_in_logs  # noqa: E402
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc  # noqa: E402

MIX = (("short", 0.4, "1s"), ("mid", 0.4, "3s"), ("long", 0.2, "10s"))
FINISHED = (
    "SELECT j.name, extract(epoch FROM b.finished_at), b.phase, "
    "(SELECT min(extract(epoch FROM e.time)) FROM events e WHERE e.job_uid = j.uid AND e.reason = 'JobRunning') "
    "FROM jobs j JOIN resource_bindings b ON b.job_uid = j.uid "
    "WHERE b.finished_at IS NOT NULL AND b.finished_at > to_timestamp(%s)"
)


@dataclass
class Minute:
    rss: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    db_bytes: list[int] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds so far, at the minute's last sample


class Watcher(threading.Thread):
    """Every few seconds: RSS of each process, the database size, and the jobs finished since."""

    def __init__(self, url: str, procs: list[Proc], start: float, pg: Postgres) -> None:
        super().__init__(daemon=True)
        self.url, self.procs, self.start_at, self.pg = url, procs, start, pg
        self.minutes: dict[int, Minute] = defaultdict(Minute)
        self.finished: dict[str, tuple[float, str, float | None]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        since = self.start_at - 60
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.wait(10):
                minute = self.minutes[int((time.time() - self.start_at) // 60)]
                for p in self.procs:
                    minute.rss[p.name].append(p.sample_rss())
                    minute.cpu[p.name] = p.cpu_seconds()
                minute.cpu["postgres"] = self.pg.cpu_seconds()
                minute.db_bytes.append(int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]))  # type: ignore[index]
                look = time.time()
                for name, finished, phase, running in conn.execute(FINISHED, (since,)).fetchall():
                    self.finished[str(name)] = (float(finished), str(phase), None if running is None else float(running))
                since = look - 15  # a commit stamped before it was visible is read again, not missed


class Prober(threading.Thread):
    """Every ``every`` seconds one 1 s job pinned to the idle cluster PROBE (the load's jobs may
    not go there): its submit->Running is how soon the hub starts work on a cluster with room
    while the rest of the federation is busy."""

    def __init__(self, target: str, every: float, start: float) -> None:
        super().__init__(daemon=True)
        self.target, self.every, self.start_at = target, every, start
        self.due: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        with grpc.insecure_channel(self.target) as channel:
            stub = jobs_pb2_grpc.JobServiceStub(channel)
            i = 0
            while not self.stop.wait(max(0.0, self.start_at + i * self.every - time.time())):
                name = f"probe-{i}"
                due = time.time()
                pin = f',"vglobal.io/clusters":"{PROBE}"'
                try:
                    stub.SubmitJob(jobs_pb2.SubmitJobRequest(manifest=MANIFEST % (name, "1s", pin), request_id=name), timeout=60)
                    self.due[name] = due
                except grpc.RpcError as exc:
                    print(f"probe {name}: {exc.code().name}", file=sys.stderr)
                i += 1


PROBE = "probe"


def q(values: list[float], p: int) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def growth(first: float, last: float) -> float:
    return (last - first) / first if first else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=200.0, help="jobs/s offered, all kinds together")
    ap.add_argument("--ttl", type=float, default=60.0, help="--finished-job-ttl of the hub, seconds")
    ap.add_argument(
        "--warmup", type=float, default=16.0,
        help="minutes not judged for growth: agents keep finished runs 10 min, the watch log 15 min",
    )  # fmt: skip
    ap.add_argument("--hub-flag", action="append", default=[], help="more hub flags (--hub-flag=--watch-keep-for=2m)")
    ap.add_argument("--clusters", type=int, default=2)
    ap.add_argument("--keep", default="", help="keep logs and records in this directory")
    ap.add_argument("--probe-every", type=float, default=5.0, help="seconds between probe jobs to the idle cluster (0: none)")
    ap.add_argument("--code", default="", help="run hub and agents from this source tree (a baseline)")
    args = ap.parse_args()
    if args.code:
        CODE[0] = Path(args.code).resolve()
    work = Path(args.keep or tempfile.mkdtemp(prefix="vglobal-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    pg = Postgres(work / "pgdata")
    loads: list[Proc] = []
    system = System(pg.fresh_database("soak"), work, hub_flags=["--rate-limit", "0", "--finished-job-ttl", f"{args.ttl:g}s", *args.hub_flag])
    try:
        system.start_hub()
        system.start_agents(args.clusters, 50, 110, [])
        pinned = ",".join(f"c{i}" for i in range(args.clusters))
        if args.probe_every > 0:
            system.start_agent(PROBE, 2, 110, [])
        seconds = args.minutes * 60
        start = time.time() + 5
        watcher = Watcher(system.database_url, system.procs(), start, pg)
        watcher.start()
        prober = Prober(system.target, args.probe_every, start)
        if args.probe_every > 0:
            prober.start()
        for prefix, share, duration in MIX:
            rate = args.rate * share
            loads.append(
                spawn(
                    f"load-{prefix}",
                    [str(BENCH / "e2e_load.py"), "--target", system.target, "--prefix", prefix,
                     "--count", str(int(rate * seconds)), "--rate", str(rate), "--duration", duration,
                     "--start-at", str(start), "--clusters", pinned, "--out", str(work / f"load-{prefix}.json")],
                    work,
                    module=False,
                )
            )  # fmt: skip
        for load in loads:
            load.popen.wait()
        prober.stop.set()
        records: list[list[Any]] = []
        for prefix, _, _ in MIX:
            records += json.loads((work / f"load-{prefix}.json").read_text())
        stored = {r[0]: r for r in records if r[4] == "OK"}
        deadline = time.time() + 120
        while time.time() < deadline and not set(stored) | set(prober.due) <= set(watcher.finished):
            time.sleep(2)
        time.sleep(10)
        watcher.stop.set()
        watcher.join()
        report(args, system, watcher, records, stored, prober.due)
    finally:
        for load in loads:
            load.stop()
        system.stop()
        pg.stop(keep_data=bool(args.keep))  # logs stay; the database goes unless asked to keep
    print(f"logs in {work}")


def report(
    args: argparse.Namespace,
    system: System,
    w: Watcher,
    records: list[list[Any]],
    stored: dict[str, list[Any]],
    probes: dict[str, float],
) -> None:
    start = w.start_at
    submit: dict[int, list[float]] = defaultdict(list)
    to_run: dict[int, list[float]] = defaultdict(list)
    for name, due, _sent, done, code in records:
        if code != "OK":
            continue
        m = int((due - start) // 60)
        submit[m].append(done - due)
        running = w.finished.get(name, (0.0, "", None))[2]
        if running is not None:
            to_run[m].append(running - due)
    probe_run: dict[int, list[float]] = defaultdict(list)
    for name, due in probes.items():
        running = w.finished.get(name, (0.0, "", None))[2]
        if running is not None:
            probe_run[int((due - start) // 60)].append(running - due)
    finished = {n: f for n, f in w.finished.items() if n in stored}
    lost = sorted(set(stored) - {n for n, f in finished.items() if f[1] == "Succeeded"})
    logs = {p.name: p.log.read_text(errors="replace") for p in system.agents}
    runs = runs_in_logs(logs)
    twice = sorted(n for n in stored if len(runs.get(n, [])) > 1 or any(g != 1 for _, g in runs.get(n, [])))
    failed_calls = len(records) - len(stored)
    names = [p.name for p in system.procs()]
    print(f"soak: {args.rate:g} jobs/s offered for {args.minutes:g} min, retention {args.ttl:g} s, {args.clusters} clusters")
    print("| min | submitted | submit p50 / p99 ms | submit->Running p50 / p99 s | probe p50 / max s | "
          + " | ".join(f"{n} MiB" for n in names) + " | db MiB |")  # fmt: skip
    print("|---:|---:|---|---|---|" + "---:|" * len(names) + "---:|")
    minutes = sorted(m for m in submit if m >= 0)
    for m in minutes:
        mm = w.minutes.get(m, Minute())
        rss = " | ".join(f"{statistics.median(mm.rss[n]) / 2**20:.0f}" if mm.rss.get(n) else "-" for n in names)
        db = f"{statistics.median(mm.db_bytes) / 2**20:.0f}" if mm.db_bytes else "-"
        print(f"| {m} | {len(submit[m])} | {q(submit[m], 50) * 1000:.1f} / {q(submit[m], 99) * 1000:.1f} | "
              f"{q(to_run[m], 50):.2f} / {q(to_run[m], 99):.2f} | "
              f"{q(probe_run[m], 50):.2f} / {max(probe_run[m], default=float('nan')):.2f} | {rss} | {db} |")  # fmt: skip
    judged = [m for m in minutes if m >= args.warmup and w.minutes.get(m)]
    ok = not lost and not twice
    verdicts = [f"lost {len(lost)}", f"run twice {len(twice)}", f"failed calls {failed_calls}"]
    if len(judged) >= 2:
        first, last = judged[0], judged[-1]
        for n in names:
            g = growth(statistics.median(w.minutes[first].rss[n]), statistics.median(w.minutes[last].rss[n]))
            ok = ok and g < 0.10
            verdicts.append(f"{n} RSS {g:+.1%}")
        g = growth(statistics.median(w.minutes[first].db_bytes), statistics.median(w.minutes[last].db_bytes))
        ok = ok and g < 0.10
        verdicts.append(f"db size {g:+.1%}")
        for label, series, floor in (("submit p99", submit, 0.05), ("submit->Running p99", to_run, 1.0)):
            a, b = q(series[first], 99), q(series[last], 99)
            flat = b <= max(2 * a, floor)
            ok = ok and flat
            verdicts.append(f"{label} {a:.3f} -> {b:.3f} s")
    else:
        ok = False
        verdicts.append("too short to judge growth (needs two minutes after warm-up)")
    done = sum(1 for f in finished.values() if f[1] == "Succeeded")
    span = max(1.0, max((f[0] for f in finished.values()), default=start) - start)
    per_day = done / span * 86400
    print(f"completed {done} of {len(stored)} stored in {span:.0f} s: {done / span:.0f} jobs/s, {per_day:,.0f} jobs a day")
    try:
        cpu_line(w, minutes, len(stored) / max(1, len(minutes)) / 60)
    except Exception as exc:  # a figure missing, not the verdict
        print(f"CPU figures not computed: {exc!r}")
    every_probe = [v for m in sorted(probe_run) for v in probe_run[m]]
    if probes:
        print(f"probes to the idle cluster: {len(every_probe)} of {len(probes)} seen Running, "
              f"submit->Running p50 {q(every_probe, 50):.2f} s, p90 {q(every_probe, 90):.2f} s")  # fmt: skip
    if lost[:5] or twice[:5]:
        print(f"lost {lost[:5]}  twice {twice[:5]}")
    print(f"{'PASS' if ok else 'FAIL'}: " + ", ".join(verdicts))


def cpu_line(w: Watcher, minutes: list[int], rate: float) -> None:
    """Each process's CPU over the run's whole minutes (1.0 = a core), and per job stored."""
    done = [m for m in minutes if m in w.minutes and m - 1 in w.minutes]
    if len(done) < 2 or rate <= 0:
        return
    a, b = w.minutes[done[0] - 1].cpu, w.minutes[done[-1]].cpu
    span = 60.0 * (done[-1] - done[0] + 1)
    parts = [f"{n} {(b[n] - a.get(n, 0.0)) / span:.2f} ({(b[n] - a.get(n, 0.0)) / span / rate * 1000:.1f} ms/job)" for n in b]
    print("CPU, cores (per job stored): " + ", ".join(parts))


if __name__ == "__main__":
    main()
