"""Submit ceilings: the hub beside servers that do only part of its work, one load, one run.

    .venv/bin/python bench/limit.py [--seconds 10] [--lone 200] [--batch-jobs 10000] [--profile DIR]

Three JobService servers, each on TLS with the hub's certificate and its token check (the hub's
Guard), from certificates of `vglobal certs init`:
- fixed: a grpc.aio server from the generated stubs answering a fixed reply (bench/limit_servers.py);
- insert: the same, group-committing an INSERT of each manifest into the same embedded PostgreSQL;
- hub: `vglobal hub` (rate limit off) with two simulated agents (`vglobal agent --sim`, mTLS).
Each phase starts each server afresh (a fresh database) and puts the same load on it, one after
the other; the load is bench/e2e_load.py (an asyncio grpc.aio client, one process):
- single: SubmitJob with 64 calls in flight for --seconds [hub >= 0.5x fixed];
- half: SubmitJob offered at half the rate that server achieved in single, for --seconds [hub p99 < 50 ms];
- batch: SubmitJobs of 500, --batch-inflight calls in flight, for --seconds [hub >= 0.5x insert];
- lone (hub only): --lone SubmitJob calls one at a time, each job's pod running 0 s, through to
  every job finished; hub, agents and Postgres CPU per job [hub <= 1 ms, Postgres, agent <= 0.3 ms];
- batches (hub only): --batch-jobs jobs in SubmitJobs of 500 through to finished [hub <= 0.25 ms].
CPU is read from the processes' counters (psutil) over the phase; "idle" is what the same processes
burn per second with nothing to do, measured before the load and taken off the per-job figures.
With --profile, py-spy records the hub in each phase but half (raw collapsed stacks plus a summary);
--phases runs only some (half runs single first: its rates set the offered ones).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_procs import Postgres, Proc, System, free_port, phase_counts, spawn, wait_healthy
from e2e_report import summarize_profile

from vglobal.client import Client

BENCH = Path(__file__).resolve().parent
KINDS = ["fixed", "insert", "hub"]
PHASES = ["single", "half", "batch", "lone", "batches"]
FINISHED = ("Succeeded", "Failed", "Aborted")


@dataclass
class Server:
    """One server under load, the processes whose CPU it costs, and how a client reaches it."""

    kind: str
    procs: list[Proc]
    dial_args: list[str]
    system: System | None = None

    def cpu(self) -> float:
        return sum(p.cpu_seconds() for p in self.procs[:1])

    def main_cpu(self) -> float:
        """The server's first process alone (a hub's leader loops and agent port, beside its
        --api-processes)."""
        return sum(p.cpu_seconds(children=False) for p in self.procs[:1])

    def agents_cpu(self) -> float:
        return sum(p.cpu_seconds() for p in self.procs[1:])


@dataclass
class Result:
    kind: str
    phase: str
    jobs: int = 0
    seconds: float = 0.0
    rate: float = 0.0
    latency: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds over the phase
    idle: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds per second idle
    errors: int = 0
    cycles: float = 0.0  # the hub's dispatch cycles over the phase
    cycle_seconds: float = 0.0  # and the time they took

    def per_job_ms(self, who: str, *, idle_off: bool = True) -> float:
        """CPU per job; ``idle_off``: less what the process burnt idle over as long (other
        processes' load and the previous server's leftovers make that estimate rough: both shown)."""
        spent = self.cpu.get(who, 0.0) - (self.idle.get(who, 0.0) * self.seconds if idle_off else 0.0)
        return 1000 * spent / max(1, self.jobs)

    def pct(self, q: float) -> float:
        return float(np.percentile(np.asarray(self.latency), q)) * 1000 if self.latency else float("nan")


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        from vglobal.cli.certs import UserSpec, init_certs

        self.args = args
        self.work = work
        self.certs = work / "certs"
        init_certs(self.certs, "localhost", ["c0", "c1"], [UserSpec.parse("bench:admin")], days=1)
        self.pg = Postgres(work / "pgdata")
        if args.statements:
            self.pg.track_statements()
        self.n = 0

    def dial_args(self, target: str) -> list[str]:
        c = self.certs
        return ["--hub", target, "--ca-file", str(c / "ca.crt"), "--token-file", str(c / "token-bench")]

    @contextlib.contextmanager
    def server(self, kind: str) -> Iterator[Server]:
        self.n += 1
        logdir = self.work / f"{self.n:02d}-{kind}"
        logdir.mkdir()
        url = self.pg.fresh_database(f"limit_{self.n}")
        if kind == "hub":
            flags = ["--rate-limit", "0", *self.args.hub_flag]
            system = System(url, logdir, hub_flags=flags, certs=self.certs)
            try:
                system.start_hub()
                system.start_agents(2, self.args.nodes, 100, [])
                with Client(dial=system.dial()) as c:
                    deadline = time.monotonic() + 60
                    while len([x for x in c.list_clusters() if x.state == "Ready"]) < 2:
                        if time.monotonic() > deadline:
                            raise RuntimeError("agents did not register")
                        time.sleep(0.2)
                yield Server(kind, system.procs(), system.dial_args(), system)
            finally:
                system.stop()
            return
        target = f"127.0.0.1:{free_port()}"
        c = self.certs
        args = [str(BENCH / "limit_servers.py"), "--kind", kind, "--listen", target,
                "--tls-cert", str(c / "hub.crt"), "--tls-key", str(c / "hub.key"),
                "--auth-config", str(c / "auth.yaml"), "--database-url", url]  # fmt: skip
        proc = spawn(kind, args, logdir, module=False)
        try:
            from vglobal.dial import Dial

            wait_healthy(Dial(target, ca_file=c / "ca.crt"), proc)
            yield Server(kind, [proc], self.dial_args(target))
        finally:
            proc.stop()

    def load(self, server: Server, prefix: str, **kw: Any) -> list[list[Any]]:
        """One bench/e2e_load.py process against ``server``; every job's record."""
        out = self.work / f"{prefix}.json"
        args = [str(BENCH / "e2e_load.py"), *server.dial_args, "--prefix", prefix, "--out", str(out)]
        args += ["--connections", str(self.args.connections)]
        for k, v in kw.items():
            args += [f"--{k.replace('_', '-')}", str(v)]
        proc = spawn(prefix, args, self.work, module=False)
        if proc.popen.wait() != 0:
            raise RuntimeError(f"{prefix} failed; see {proc.log}")
        records: list[list[Any]] = json.loads(out.read_text())
        return records

    def idle(self, server: Server, seconds: float = 3.0) -> dict[str, float]:
        before = self.cpu(server)
        time.sleep(seconds)
        after = self.cpu(server)
        return {k: (after[k] - before[k]) / seconds for k in after}

    def cpu(self, server: Server) -> dict[str, float]:
        got = {"server": server.cpu(), "agents": server.agents_cpu(), "postgres": self.pg.cpu_seconds()}
        if "--api-processes" in self.args.hub_flag and server.system:
            got["first process"] = server.main_cpu()
        return got

    def measure(
        self, server: Server, phase: str, prefix: str, wait: Callable[[], None] | None = None, **load: Any
    ) -> Result:
        """The load (bench/e2e_load.py's options) on ``server``, then ``wait``; what it achieved."""
        result = Result(server.kind, phase, idle=self.idle(server))
        if self.args.statements and server.system:
            self.pg.reset_statements(server.system.database_url)
        before, started = self.cpu(server), time.time()
        cycles = server.system.scrape() if server.system else {}
        records = self.load(server, prefix, **load)
        if wait is not None:
            wait()
        result.seconds = time.time() - started
        after = self.cpu(server)
        if server.system:
            now, name = server.system.scrape(), "vglobal_dispatch_cycle_seconds"
            result.cycles = now[f"{name}_count"] - cycles[f"{name}_count"]
            result.cycle_seconds = now[f"{name}_sum"] - cycles[f"{name}_sum"]
            if self.args.statements:
                print(f"  Postgres, {phase}, top statements:", flush=True)
                print(self.pg.top_statements(server.system.database_url), flush=True)
        result.cpu = {k: after[k] - before[k] for k in after}
        ok = [r for r in records if r[4] == "OK"]
        result.errors = len(records) - len(ok)
        result.jobs = len(ok)
        if ok:
            span = max(r[3] for r in ok) - min(r[1] for r in ok)
            result.rate = len(ok) / span if span > 0 else 0.0
            result.latency = [r[3] - r[1] for r in ok]
        return result

    @contextlib.contextmanager
    def profiled(self, server: Server, name: str) -> Iterator[None]:
        if not self.args.profile or server.kind != "hub":
            yield
            return
        out = Path(self.args.profile)
        out.mkdir(parents=True, exist_ok=True)
        raw = out / f"{name}.txt"
        cmd = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(server.procs[0].popen.pid)]
        # --gil: only samples holding the GIL, i.e. where the hub's CPU goes, not where it waits.
        cmd += ["--format", "raw", "--rate", "50", "--nonblocking", "--gil", "-o", str(raw)]
        spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield
        finally:
            spy.send_signal(2)
            spy.wait(timeout=60)
            if raw.exists():
                summary = summarize_profile(raw, top=15)
                (out / f"{name}.summary").write_text(summary)
                print(summary, flush=True)

    def finished(self, server: Server, total: int, timeout: float = 300.0) -> Callable[[], None]:
        def wait() -> None:
            assert server.system is not None
            url = server.system.database_url
            deadline = time.monotonic() + timeout
            with psycopg.connect(url, autocommit=True) as conn:
                while time.monotonic() < deadline:
                    if sum(phase_counts(conn).get(k, 0) for k in FINISHED) >= total:
                        return
                    time.sleep(0.2)
            print(f"  not every job finished within {timeout:g} s", flush=True)

        return wait


def show(r: Result, extra: str = "") -> None:
    cpu = ", ".join(
        f"{k} {r.per_job_ms(k, idle_off=False):.2f} ({r.per_job_ms(k):.2f})" for k in r.cpu if r.cpu[k] > 0
    )
    print(
        f"  {r.phase:<7} {r.kind:<6} {r.jobs:>7} jobs {r.rate:>9,.0f} jobs/s  p50 {r.pct(50):7.1f} ms  "
        f"p99 {r.pct(99):7.1f} ms  CPU ms/job raw (idle taken off): {cpu}"
        + (f"  {r.errors} errors" if r.errors else "")
        + (f"  {r.cycles:.0f} dispatch cycles ({r.cycle_seconds:.1f} s)" if r.cycles else "")
        + extra,
        flush=True,
    )


def run(args: argparse.Namespace, bench: Bench) -> list[Result]:
    s, results, phases = args.seconds, [], set(args.phases.split(","))
    single: dict[str, Result] = {}
    for kind in KINDS if phases & {"single", "half"} else []:
        with bench.server(kind) as server, bench.profiled(server, "single-hub"):
            r = bench.measure(server, "single", f"s-{kind}", concurrency=64, count=10**7, seconds=s)
        single[kind] = r
        results.append(r)
        show(r)
    for kind in KINDS if "half" in phases else []:
        rate = max(1.0, single[kind].rate / 2)
        with bench.server(kind) as server:
            r = bench.measure(server, "half", f"h-{kind}", rate=rate, count=int(rate * s))
        results.append(r)
        show(r, f"  (offered {rate:,.0f}/s)")
    for kind in KINDS if "batch" in phases else []:
        with bench.server(kind) as server, bench.profiled(server, "batch-hub"):
            r = bench.measure(
                server,
                "batch",
                f"b-{kind}",
                batch=500,
                concurrency=args.batch_inflight,
                count=10**8,
                seconds=s,
            )
        results.append(r)
        show(r)
    if "lone" in phases:
        with bench.server("hub") as server, bench.profiled(server, "lone-hub"):
            wait = bench.finished(server, args.lone)
            r = bench.measure(server, "lone", "lone", wait, concurrency=1, count=args.lone, duration="0s")
        results.append(r)
        show(r, "  (through to finished)")
    if "batches" not in phases:
        return results
    with bench.server("hub") as server, bench.profiled(server, "batches-hub"):
        wait = bench.finished(server, args.batch_jobs)
        r = bench.measure(
            server, "batches", "bb", wait, batch=500, concurrency=2, count=args.batch_jobs, duration="0s"
        )
        results.append(r)
        show(r, "  (through to finished)")
    return results


def ratios(results: list[Result]) -> None:
    by = {(r.phase, r.kind): r for r in results}

    def ratio(phase: str, over: str) -> float:
        return by[(phase, "hub")].rate / max(1e-9, by[(phase, over)].rate)

    if ("single", "hub") in by:
        print(f"single: hub/fixed {ratio('single', 'fixed'):.2f}x  (target >= 0.5x)")
    if ("batch", "hub") in by:
        print(f"batch:  hub/insert {ratio('batch', 'insert'):.2f}x  (target >= 0.5x)")
    if ("half", "hub") in by:
        print(f"half:   hub p99 {by[('half', 'hub')].pct(99):.1f} ms  (target < 50 ms)")
    for phase, limit in (("lone", 1.0), ("batches", 0.25)):
        if (phase, "hub") not in by:
            continue
        r = by[(phase, "hub")]
        print(
            f"{phase}: hub {r.per_job_ms('server', idle_off=False):.2f} ms/job raw (target <= {limit}), "
            f"agents {r.per_job_ms('agents', idle_off=False):.2f}, "
            f"Postgres {r.per_job_ms('postgres', idle_off=False):.2f} (targets <= 0.3)"
        )


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=10.0, help="load per server in single, half, batch")
    p.add_argument("--batch-inflight", type=int, default=2, help="SubmitJobs calls in flight")
    p.add_argument("--lone", type=int, default=200, help="lone: jobs submitted one at a time")
    p.add_argument("--batch-jobs", type=int, default=10_000, help="batches: jobs through to finished")
    p.add_argument("--nodes", type=int, default=50, help="nodes per simulated cluster (100 pods each)")
    p.add_argument("--phases", default=",".join(PHASES), help="comma-separated, of " + ", ".join(PHASES))
    p.add_argument("--profile", default="", help="py-spy the hub in each phase into this directory")
    p.add_argument(
        "--statements", action="store_true", help="pg_stat_statements: the hub's top statements per phase"
    )
    p.add_argument("--workdir", default="", help="logs and data (default: a temporary directory)")
    p.add_argument("--hub-flag", action="append", default=[], help="extra hub flag (repeatable)")
    p.add_argument(
        "--connections",
        type=int,
        default=1,
        help="connections the load spreads its calls over (every server)",
    )
    return p.parse_args()


def main() -> None:
    args = parse()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="vglobal-limit-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work directory {work}; load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores", flush=True)
    bench = Bench(args, work)
    try:
        results = run(args, bench)
    finally:
        bench.pg.stop()
    ratios(results)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
