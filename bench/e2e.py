"""End-to-end throughput: real processes from a gRPC submit to Completed.

An embedded PostgreSQL, a hub (`vglobal hub`), simulated agents (`vglobal agent --sim`, 4 clusters
of 20 nodes x 100 pod slots by default) and load-generator processes (bench/e2e_load.py: asyncio
gRPC clients), all on loopback. Each phase gets a fresh database, hub and agents, and prints one
row: offered and achieved rate, latencies of the submit call and from submit to Running (the run's
JobRunning event) and to Completed (its binding finished at the hub), CPU (% of one core over the
phase) and peak RSS of the hub, the agents (CPU summed, RSS of the biggest), Postgres and the load
generators, and Postgres commits/s. The pending/running/completed counts over time are plotted to
bench/e2e-PHASE.png. Matplotlib and py-spy are bench-only: `.venv/bin/pip install matplotlib py-spy`.

    .venv/bin/python bench/e2e.py                                  # every phase
    .venv/bin/python bench/e2e.py --phase submit --phase latency   # some of them
    .venv/bin/python bench/e2e.py --phase pipeline --profile /tmp/prof   # py-spy on hub and an agent

Phases (targets in brackets):
- submit: SubmitJob, 64 calls in flight, --submit-count jobs [>= 2,000 submits/s]
- latency: SubmitJob at an offered --latency-rate (500/s) for --latency-seconds [p99 < 50 ms]
- batch: SubmitJobs of 500 jobs, 4 calls in flight, --batch-count jobs [>= 20,000 jobs/s]
- pipeline: --pipeline-jobs one-pod jobs of 1 s offered at --pipeline-rate jobs/s in SubmitJobs of
  50 [>= 1,000 jobs/s completed; submit->Running p50 < 1 s, p99 < 3 s while capacity exists]
- history: a steady --history-rate jobs/s of 1 s jobs on an empty history, then again with
  --history-rows finished jobs stored, then `vglobal get jobs -o json` over them [dispatch cycle
  within 10% of the empty history's; hub RSS < 1 GiB]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import psycopg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_procs import CODE, Postgres, Proc, System, commits, phase_counts, spawn
from e2e_report import HEADER, Phase, latencies, plot, row, summarize_profile
from e2e_seed import seed_finished

from vglobal.client import Client

BENCH = Path(__file__).resolve().parent


class Run:
    """One phase's system, load and samples."""

    def __init__(
        self, args: argparse.Namespace, pg: Postgres, name: str, workdir: Path, certs: Path | None
    ) -> None:
        self.args = args
        self.pg = pg
        self.phase = Phase(name)
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.url = pg.fresh_database(f"bench_{name}")
        flags = ["--rate-limit", args.rate_limit, *args.hub_flag]
        self.system = System(self.url, self.workdir, hub_flags=flags, certs=certs)
        self.loads: list[Proc] = []
        self.load_cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._t0 = 0.0
        self._cpu0: dict[str, float] = {}
        self._commits0 = 0
        self.profilers: list[subprocess.Popen[bytes]] = []

    # ---- the system

    def start(self) -> None:
        self.system.start_hub()
        nodes, per_node = self.args.nodes, self.args.pods_per_node
        self.system.start_agents(self.args.clusters, nodes, per_node, list(self.args.agent_flag))
        with Client(dial=self.system.dial()) as c:
            deadline = time.monotonic() + 60
            while len([x for x in c.list_clusters() if x.state == "Ready"]) < self.args.clusters:
                if time.monotonic() > deadline:
                    raise RuntimeError("agents did not register")
                time.sleep(0.2)

    def restart_hub(self) -> None:
        for a in self.system.agents:
            a.stop()
        self.system.agents = []
        assert self.system.hub is not None
        self.system.hub.stop()
        self.start()

    def stop(self) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        for p in self.profilers:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.profilers:
            p.wait(timeout=60)
        self.system.stop()

    # ---- measuring

    def cpu_now(self) -> dict[str, float]:
        hub = self.system.hub
        return {
            "hub": hub.cpu_seconds() if hub else 0.0,
            "agents": sum(a.cpu_seconds() for a in self.system.agents),
            "postgres": self.pg.cpu_seconds(),
        }

    def begin(self, offered: str) -> None:
        self.phase.offered = offered
        self._t0 = time.time()
        self._cpu0 = self.cpu_now()
        self._commits0 = commits(self.url)
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        if self.args.profile:
            self._profile()
        if self.args.statements:
            self.pg.reset_statements(self.url)

    def end(self) -> float:
        elapsed = time.time() - self._t0
        cpu = self.cpu_now()
        p = self.phase
        p.cpu = {k: 100 * (cpu[k] - self._cpu0[k]) / elapsed for k in cpu}
        p.cpu["load"] = 100 * sum(self.load_cpu.values()) / elapsed
        p.commits_per_s = (commits(self.url) - self._commits0) / elapsed
        hub = self.system.hub
        p.rss = {
            "hub": (hub.peak_rss if hub else 0) / 2**20,
            "agents": max((a.peak_rss for a in self.system.agents), default=0) / 2**20,
        }
        p.notes.append(f"load average {os.getloadavg()[0]:.1f} at the end")
        if self.args.statements:
            p.notes.append("Postgres's statements with the most time:\n" + self.pg.top_statements(self.url, 40))
        return elapsed

    def _sample(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                self.phase.samples.append((time.time(), phase_counts(conn) if self.args.plot else {}))
                for proc in self.system.procs():
                    proc.sample_rss()
                for load in self.loads:
                    try:
                        t = load.ps.cpu_times()
                        self.load_cpu[load.popen.pid] = t.user + t.system
                    except psutil.NoSuchProcess:
                        pass
                self._stop.wait(0.5)

    def _profile(self) -> None:
        out = Path(self.args.profile)
        out.mkdir(parents=True, exist_ok=True)
        targets = [self.system.hub, *self.system.agents[:1]]
        for proc in targets:
            assert proc is not None
            path = out / f"{self.phase.name}-{proc.name}.txt"
            cmd = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(proc.popen.pid)]
            cmd += ["--format", "raw", "--rate", "50", "--nonblocking", "--gil", "-o", str(path)]
            self.profilers.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    # ---- the load

    def load(self, workers: int, count: int, prefix: str = "w", **kw: Any) -> list[list[Any]]:
        """``count`` jobs over ``workers`` processes; returns every job's record."""
        start_at = time.time() + 2.0
        outs, started = [], []
        for w in range(workers):
            n = count // workers + (1 if w < count % workers else 0)
            out = self.workdir / f"load-{prefix}{w}.json"
            args = [str(BENCH / "e2e_load.py"), *self.system.dial_args(), "--prefix", f"{prefix}{w}"]
            args += ["--count", str(n), "--start-at", str(start_at), "--out", str(out)]
            for k, v in kw.items():
                args += [f"--{k.replace('_', '-')}", str(v)]
            started.append(spawn(f"load-{prefix}{w}", args, self.workdir, module=False))
            outs.append(out)
        self.loads += started
        for proc in started:
            if proc.popen.wait() != 0:
                raise RuntimeError(f"{proc.name} failed; see {proc.log}")
        records: list[list[Any]] = []
        for out in outs:
            records += json.loads(out.read_text())
        return records

    def wait_finished(self, total: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                c = phase_counts(conn)
                if sum(c.get(k, 0) for k in ("Succeeded", "Failed", "Aborted")) >= total:
                    return
                time.sleep(0.5)
        self.phase.notes.append(f"not every job finished within {timeout:g}s")


def rate(records: list[list[Any]]) -> float:
    ok = [r for r in records if r[4] == "OK"]
    if not ok:
        return 0.0
    return len(ok) / (max(r[3] for r in ok) - min(r[1] for r in ok))


def phase_submit(run: Run) -> None:
    a = run.args
    run.begin("64 in flight")
    recs = run.load(a.workers, a.submit_count, concurrency=64 // a.workers)
    run.end()
    run.phase.achieved = f"{rate(recs):,.0f} submits/s"
    latencies(run.phase, recs, run.url, runs=False)


def phase_latency(run: Run) -> None:
    a = run.args
    run.begin(f"{a.latency_rate:g}/s")
    count = int(a.latency_rate * a.latency_seconds)
    recs = run.load(a.workers, count, rate=a.latency_rate / a.workers)
    run.end()
    run.phase.achieved = f"{rate(recs):,.0f} submits/s"
    latencies(run.phase, recs, run.url, runs=False)


def phase_batch(run: Run) -> None:
    a = run.args
    run.begin("batches of 500, 4 in flight")
    recs = run.load(a.workers, a.batch_count, batch=500, concurrency=max(1, 4 // a.workers))
    run.end()
    run.phase.achieved = f"{rate(recs):,.0f} jobs/s"
    latencies(run.phase, recs, run.url, runs=False)


def completions_per_second(run: Run) -> str:
    """Sustained: completions per second between the 10th and the 90th percentile of finishing."""
    done = sorted(c for c in run.phase.completed)
    if len(done) < 10:
        return "-"
    lo, hi = done[len(done) // 10], done[len(done) * 9 // 10]
    return f"{0.8 * len(done) / max(hi - lo, 1e-9):,.0f} jobs/s completed"


def phase_pipeline(run: Run) -> None:
    a = run.args
    run.begin(f"{a.pipeline_rate:g} jobs/s in SubmitJobs of 50")
    recs = run.load(a.workers, a.pipeline_jobs, batch=50, rate=a.pipeline_rate / a.workers)
    run.wait_finished(a.pipeline_jobs, timeout=a.timeout)
    elapsed = run.end()
    latencies(run.phase, recs, run.url, runs=True)
    run.phase.achieved = completions_per_second(run)
    run.phase.notes.append(f"all {a.pipeline_jobs} jobs finished {elapsed:.1f} s after the first submit")
    # Throughput on a shared machine follows its load; CPU per job follows the code.
    per = {k: run.phase.cpu[k] / 100 * elapsed * 1000 / a.pipeline_jobs for k in ("hub", "agents", "postgres")}
    run.phase.notes.append(
        "CPU s per 1,000 jobs: hub {hub:.2f}, agents {agents:.2f}, Postgres {postgres:.2f}".format(**per)
        + f" (sum {sum(per.values()):.2f})"
    )


def steady(run: Run, label: str) -> tuple[float, float]:
    """The history phase's steady load; returns (mean dispatch cycle seconds, cycles)."""
    a = run.args
    before = run.system.scrape()
    count = int(a.history_rate * a.history_seconds)
    recs = run.load(a.workers, count, batch=20, rate=a.history_rate / a.workers, prefix=label)
    after = run.system.scrape()
    n = after["vglobal_dispatch_cycle_seconds_count"] - before["vglobal_dispatch_cycle_seconds_count"]
    s = after["vglobal_dispatch_cycle_seconds_sum"] - before["vglobal_dispatch_cycle_seconds_sum"]
    latencies(run.phase, recs, run.url, runs=False)
    return (s / n if n else 0.0), n


def phase_history(run: Run) -> None:
    a = run.args
    run.begin(f"{a.history_rate:g} jobs/s, empty history")
    empty, n0 = steady(run, "empty")
    run.phase.notes.append(f"empty history: mean dispatch cycle {empty * 1000:.1f} ms over {n0:.0f} cycles")
    t = time.time()
    seed_finished(run.url, a.history_rows)
    run.phase.notes.append(f"stored {a.history_rows:,} finished jobs in {time.time() - t:.0f} s")
    run.restart_hub()
    full, n1 = steady(run, "full")
    run.end()
    ratio = full / empty if empty else float("nan")
    run.phase.achieved = f"cycle {empty * 1000:.1f} → {full * 1000:.1f} ms ({ratio:.2f}x)"
    run.phase.notes.append(
        f"{a.history_rows:,} finished jobs: mean dispatch cycle {full * 1000:.1f} ms over {n1:.0f} cycles"
    )
    if a.get_jobs:
        get_jobs(run)


def get_jobs(run: Run) -> None:
    """`vglobal get jobs -o json` over the whole history: its time and peak RSS."""
    t = time.time()
    cmd = [sys.executable, "-m", "vglobal", *run.system.dial_args(), "get", "jobs", "-o", "json"]
    with open(os.devnull, "wb") as null:
        env = {**os.environ, "PYTHONPATH": str(CODE[0])}
        p = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, cwd=CODE[0], env=env)
        peak = 0
        ps = psutil.Process(p.pid)
        while p.poll() is None:
            try:
                peak = max(peak, ps.memory_info().rss)
            except psutil.NoSuchProcess:
                break
            time.sleep(0.2)
    err = p.stderr.read().decode()[-300:] if p.stderr else ""
    run.phase.notes.append(
        f"`vglobal get jobs -o json` over the history: exit {p.returncode}, {time.time() - t:.1f} s, "
        f"peak RSS {peak / 2**20:.0f} MiB {err.strip()}"
    )


PHASES = {
    "submit": phase_submit,
    "latency": phase_latency,
    "batch": phase_batch,
    "pipeline": phase_pipeline,
    "history": phase_history,
}


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phase", action="append", choices=list(PHASES), help="default: all")
    p.add_argument("--workers", type=int, default=2, help="load-generator processes")
    p.add_argument("--clusters", type=int, default=4)
    p.add_argument("--nodes", type=int, default=20, help="nodes per cluster")
    p.add_argument("--pods-per-node", type=int, default=100)
    p.add_argument("--submit-count", type=int, default=20_000)
    p.add_argument("--latency-rate", type=float, default=500.0)
    p.add_argument("--latency-seconds", type=float, default=20.0)
    p.add_argument("--batch-count", type=int, default=100_000)
    p.add_argument("--pipeline-jobs", type=int, default=20_000)
    p.add_argument("--pipeline-rate", type=float, default=1250.0)
    p.add_argument("--history-rows", type=int, default=1_000_000)
    p.add_argument("--history-rate", type=float, default=200.0)
    p.add_argument("--history-seconds", type=float, default=60.0)
    p.add_argument(
        "--no-get-jobs", dest="get_jobs", action="store_false", help="history: skip `get jobs` over it"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="for the pipeline to finish")
    p.add_argument(
        "--insecure", action="store_true", help="plaintext and open hub (loopback) instead of TLS + token"
    )
    p.add_argument(
        "--rate-limit", default="0", help="the hub's --rate-limit (default 100/s would cap one bench user)"
    )
    p.add_argument("--hub-flag", action="append", default=[], help="extra hub flag (repeatable)")
    p.add_argument("--agent-flag", action="append", default=[], help="extra agent flag (repeatable)")
    p.add_argument("--profile", default="", help="py-spy the hub and one agent into this directory")
    p.add_argument("--statements", action="store_true", help="Postgres's top statements (pg_stat_statements)")
    p.add_argument("--no-plot", dest="plot", action="store_false")
    p.add_argument("--workdir", default="", help="logs and data (default: a temporary directory)")
    p.add_argument("--code", default="", help="run hub, agents and CLI from this source tree (a baseline)")
    return p.parse_args()


def main() -> None:
    args = parse()
    if args.code:
        CODE[0] = Path(args.code).resolve()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="vglobal-e2e-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"work directory {workdir}; load average {os.getloadavg()[0]:.1f}", flush=True)
    certs = None
    if not args.insecure:
        from vglobal.cli.certs import UserSpec, init_certs

        certs = workdir / "certs"
        clusters = [f"c{i}" for i in range(args.clusters)]
        init_certs(certs, "localhost", clusters, [UserSpec.parse("bench:admin")], days=1)
    print(f"hub: {'plaintext, open (--insecure)' if certs is None else 'TLS, token, agents on mTLS'}")
    pg = Postgres(workdir / "pgdata")
    if args.statements:
        pg.track_statements()
    results = []
    try:
        for name in args.phase or list(PHASES):
            run = Run(args, pg, name, workdir, certs)
            try:
                run.start()
                PHASES[name](run)
            finally:
                run.stop()
            if args.plot and name != "history":
                plot(run.phase, BENCH / f"e2e-{name}.png")
            results.append(run.phase)
            print(HEADER + "\n" + row(run.phase), flush=True)
            for note in run.phase.notes:
                print(f"  {note}", flush=True)
            if args.profile:
                for f in sorted(Path(args.profile).glob(f"{name}-*.txt")):
                    summary = summarize_profile(f)
                    (f.parent / f"{f.stem}.summary").write_text(summary)
                    print(summary, flush=True)
    finally:
        pg.stop(keep_data=bool(args.workdir))  # logs stay; the database goes unless asked to keep
    print("\n" + HEADER)
    for p in results:
        print(row(p))


if __name__ == "__main__":
    main()
