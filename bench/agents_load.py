"""Many member clusters connected at once: a real hub process on PostgreSQL, N simulated agents in
this one process (bench/agents_fleet.py: each its own stream, heartbeats and inventory of
``--nodes`` nodes), and a steady stream of jobs submitted through the SDK by several threads.

    python bench/agents_load.py --agents 10,50,100 --nodes 1000 --rate 40 --seconds 60

The hub runs as a user runs it: TLS, agents with their client certificates on the agent port, a
user with a token (`vglobal certs init`). The database is a fresh one on ``--database-url``
(default $VGLOBAL_TEST_DATABASE_URL). Printed per size, over the submitting window:
- the hub's CPU seconds (and per agent: the CPU it spends with no jobs, sampled before the load),
  its peak RSS;
- heartbeat round trip: an agent queued a heartbeat -> the cluster row's last_heartbeat shows it
  (the hub's recording transaction's time, sampled every ``--sample`` seconds);
- dispatch delivery: the binding's dispatched_at (the dispatcher's write) -> the agent got it;
- report recording: the agent queued its Completed report -> the binding's finished_at;
- jobs/s completed end to end, and lost (stored but never Succeeded) / run twice (by the agents'
  own log of what they ran): 0 expected;
and a PASS/FAIL line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import psycopg

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import e2e_procs  # noqa: E402
from agents_fleet import Fleet  # noqa: E402
from e2e_load import MANIFEST  # noqa: E402
from e2e_procs import System, commits, with_database  # noqa: E402

from vglobal.client import Client, VGlobalError  # noqa: E402
from vglobal.dial import Dial  # noqa: E402


def fresh_database(url: str, name: str) -> str:
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(url, name)


def pg_cpu(database: str) -> float:
    """CPU seconds of the PostgreSQL backends serving ``database`` (the hub's pool keeps them)."""
    total = 0.0
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            cmd = " ".join(p.info["cmdline"] or ())
            if cmd.startswith("postgres: ") and f" {database} " in cmd:
                t = p.cpu_times()
                total += t.user + t.system
    return total


def q(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p / 100))]


class Sampler(threading.Thread):
    """Every ``every`` seconds: the hub's RSS and each cluster's last_heartbeat (epoch seconds)."""

    def __init__(self, system: System, url: str, every: float) -> None:
        super().__init__(daemon=True)
        self.system, self.url, self.every = system, url, every
        self.stop = threading.Event()
        self.seen: dict[str, set[float]] = {}
        self.peak_rss = 0

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.wait(self.every):
                assert self.system.hub is not None
                self.peak_rss = max(self.peak_rss, self.system.hub.sample_rss())
                rows = conn.execute(
                    "SELECT name, extract(epoch FROM last_heartbeat) FROM clusters WHERE last_heartbeat IS NOT NULL"
                ).fetchall()
                for name, at in rows:
                    self.seen.setdefault(name, set()).add(float(at))


def heartbeat_trips(fleet: Fleet, seen: dict[str, set[float]], since: float) -> list[float]:
    """For each recorded heartbeat time seen, the latest heartbeat the agent queued before it."""
    out = []
    for agent in fleet.agents:
        sent = sorted(agent.heartbeats)
        for at in sorted(seen.get(agent.name, ())):
            before = [s for s in sent if s <= at + 0.005]  # the clocks are one clock: 5 ms of rounding
            if before and before[-1] >= since:
                out.append(max(0.0, at - before[-1]))
    return out


def submit(system: System, args: argparse.Namespace, tag: str, stored: list[str], errors: list[str]) -> None:
    """``args.clients`` threads, each ``args.rate / args.clients`` jobs/s in calls of ``args.batch``."""
    per_thread = args.rate / args.clients
    count = int(per_thread * args.seconds)

    def worker(k: int) -> None:
        with Client(dial=system.dial(), timeout=60) as c:
            start = time.time()
            for first in range(0, count, args.batch):
                due = start + first / per_thread
                if (delay := due - time.time()) > 0:
                    time.sleep(delay)
                names = [f"{tag}-{k}-{i}" for i in range(first, min(count, first + args.batch))]
                try:
                    c.submit_jobs([(MANIFEST % (n, "1s", ""), n) for n in names])
                    stored.extend(names)
                except VGlobalError as exc:
                    errors.append(str(exc))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_size(args: argparse.Namespace, n: int, work: Path) -> dict[str, Any]:
    from vglobal.cli.certs import UserSpec, init_certs

    work.mkdir(parents=True, exist_ok=True)
    names = [f"c{i}" for i in range(n)]
    certs = work / "certs"
    init_certs(certs, "localhost", names, [UserSpec.parse("bench:admin")], days=1)
    dbname = f"agents_load_{n}"
    url = fresh_database(args.database_url, dbname)
    system = System(url, work, hub_flags=["--rate-limit", "0", "--placement", "spread", *args.hub_flag], certs=certs)
    fleet: Fleet | None = None
    sampler = Sampler(system, url, args.sample)
    try:
        system.start_hub()
        assert system.hub is not None

        def dial(name: str) -> Dial:
            return Dial(system.agent_target, ca_file=certs / "ca.crt", cert=certs / f"agent-{name}.crt",
                        key=certs / f"agent-{name}.key")  # fmt: skip

        fleet = Fleet(names, args.nodes, dial, run_seconds=args.run_seconds)
        t = time.time()
        fleet.start()
        while fleet.registered() < n:
            if time.time() - t > 600:
                raise RuntimeError(f"{fleet.registered()} of {n} agents registered after 600 s")
            time.sleep(0.2)
        registered = time.time() - t
        sampler.start()
        time.sleep(args.idle)  # the hub with every agent connected and nothing to run
        idle0 = (system.hub.cpu_seconds(), pg_cpu(dbname), commits(url), time.time())
        time.sleep(args.idle)
        idle1 = (system.hub.cpu_seconds(), pg_cpu(dbname), commits(url), time.time())
        idle_s = idle1[3] - idle0[3]
        load0, cpu0, t0 = os.getloadavg()[0], system.hub.cpu_seconds(), time.time()
        pg0, commits0 = pg_cpu(dbname), commits(url)
        stored: list[str] = []
        errors: list[str] = []
        submit(system, args, f"n{n}", stored, errors)
        submitted = time.time()
        deadline = submitted + args.drain
        while len(fleet.completed) < len(stored) and time.time() < deadline:
            time.sleep(0.5)
        t1, cpu1, load1 = time.time(), system.hub.cpu_seconds(), os.getloadavg()[0]
        pg1, commits1 = pg_cpu(dbname), commits(url)
        with psycopg.connect(url, autocommit=True) as conn:
            # Lost: not recorded Succeeded once the agents completed all and the hub had until
            # the drain's end to record it (the recording latency says how long it took).
            while time.time() < deadline and conn.execute(
                "SELECT count(*) FROM resource_bindings WHERE phase = 'Succeeded'"
            ).fetchone() != (len(stored),):
                time.sleep(0.5)
        time.sleep(2 * args.sample)  # the last heartbeats sampled
        sampler.stop.set()
        sampler.join()
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT j.name, j.uid, b.phase, extract(epoch FROM b.dispatched_at), "
                "extract(epoch FROM b.finished_at) FROM jobs j JOIN resource_bindings b ON b.job_uid = j.uid"
            ).fetchall()
        db = {r[0]: r for r in rows}
        lost = [nm for nm in stored if nm not in db or db[nm][2] != "Succeeded"]
        twice = [u for u, runs in fleet.runs.items() if len(set(runs)) > 1]
        delivery = [fleet.runs[r[1]][0][2] - float(r[3]) for r in rows if r[1] in fleet.runs and r[3] is not None]
        recording = [float(r[4]) - fleet.completed[r[1]] for r in rows if r[1] in fleet.completed and r[4] is not None]
        trips = heartbeat_trips(fleet, sampler.seen, t0)
        done_in_window = sum(1 for at in fleet.completed.values() if t0 <= at <= t1)
        every_agent = all(any(c == a.name for runs in fleet.runs.values() for _, c, _ in runs) for a in fleet.agents)
        return {
            "agents": n, "nodes": args.nodes, "registered_s": round(registered, 1),
            "idle_hub_cpu_per_agent_pct": round(100 * (idle1[0] - idle0[0]) / idle_s / n, 3),
            "idle_pg_cpu_per_agent_pct": round(100 * (idle1[1] - idle0[1]) / idle_s / n, 3),
            "idle_commits_per_s": round((idle1[2] - idle0[2]) / idle_s),
            "submitted": len(stored), "submit_errors": len(errors), "completed": len(fleet.completed),
            "jobs_per_s": round(done_in_window / (t1 - t0), 1), "wall_s": round(t1 - t0, 1),
            "hub_cpu_s": round(cpu1 - cpu0, 1), "hub_cpu_pct": round(100 * (cpu1 - cpu0) / (t1 - t0), 1),
            "pg_cpu_s": round(pg1 - pg0, 1), "commits_per_s": round((commits1 - commits0) / (t1 - t0)),
            "hub_peak_rss_mb": round(max(sampler.peak_rss, system.hub.peak_rss) / 2**20),
            "heartbeat_p50_ms": round(1000 * q(trips, 50)), "heartbeat_p99_ms": round(1000 * q(trips, 99)),
            "heartbeats_seen": len(trips),
            "delivery_p50_ms": round(1000 * q(delivery, 50)), "delivery_p99_ms": round(1000 * q(delivery, 99)),
            "recording_p50_ms": round(1000 * q(recording, 50)), "recording_p99_ms": round(1000 * q(recording, 99)),
            "lost": len(lost), "twice": len(twice), "every_agent_ran": every_agent,
            "agent_counts": dict(fleet.counts), "load_avg": [round(load0, 2), round(load1, 2)],
        }  # fmt: skip
    finally:
        sampler.stop.set()
        if fleet is not None:
            fleet.stop()
        system.stop()


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default="10,50,100", help="sizes, comma separated")
    ap.add_argument("--nodes", type=int, default=1000, help="nodes per cluster")
    ap.add_argument("--rate", type=float, default=40.0, help="jobs/s submitted, all clients together")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long jobs are submitted")
    ap.add_argument("--clients", type=int, default=4, help="submitting threads, each its own connection")
    ap.add_argument("--batch", type=int, default=10, help="jobs per SubmitJobs call")
    ap.add_argument("--run-seconds", type=float, default=1.0, help="how long a run lasts on its agent")
    ap.add_argument("--idle", type=float, default=10.0, help="seconds the hub's idle CPU is sampled")
    ap.add_argument("--drain", type=float, default=120.0, help="seconds to wait for the last runs")
    ap.add_argument("--sample", type=float, default=0.5, help="seconds between heartbeat samples")
    ap.add_argument("--database-url", default=os.environ.get("VGLOBAL_TEST_DATABASE_URL", ""))
    ap.add_argument("--hub-flag", action="append", default=[], help="more hub flags (--hub-flag=--x=y)")
    ap.add_argument("--keep", default="", help="keep logs in this directory")
    ap.add_argument("--json", default="", help="write the figures here too")
    ap.add_argument("--code", default="", help="run the hub from this source tree (a baseline checkout)")
    args = ap.parse_args(argv)
    if not args.database_url:
        ap.error("--database-url (or VGLOBAL_TEST_DATABASE_URL) is required")
    if args.code:
        e2e_procs.CODE[0] = Path(args.code).resolve()
    work = Path(args.keep or tempfile.mkdtemp(prefix="vglobal-agents-"))
    results = []
    for n in [int(s) for s in args.agents.split(",")]:
        r = run_size(args, n, work / f"n{n}")
        results.append(r)
        print(json.dumps(r), flush=True)
        ok = r["lost"] == 0 and r["twice"] == 0 and r["every_agent_ran"] and r["submit_errors"] == 0
        print(f"{'PASS' if ok else 'FAIL'}: {n} agents: lost {r['lost']}, run twice {r['twice']}, "
              f"every agent ran work: {r['every_agent_ran']}", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"logs in {work}")
    return results


if __name__ == "__main__":
    main()
