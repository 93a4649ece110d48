"""50 concurrent `vglobal logs -f` streams beside a sim agent's scheduling, side by side.

A real hub and two real sim agents (processes, 8 nodes each: "quiet" and "loud") on a fresh
database. On each cluster a 50-pod job writes a line every 50 ms per pod (1,000 lines/s each).
ROUNDS rounds submit BATCH small gang jobs to each cluster at once (the order alternating) and take
each cluster's time from submit to all Running; each agent's own scheduling-cycle histogram
(/metrics) gives its mean cycle. Phases without a stream (how the two agents differ on their own)
and with 50 followed streams of the loud cluster's pods (one per pod, read by this process) take
turns, REPS times each: the loud agent's change is its ratio to the quiet one with streams over the
same ratio without, so the machine's load, which both agents share at the same moment, cancels out.

    VGLOBAL_TEST_DATABASE_URL=postgresql+psycopg://... python bench/log_streams.py [--streams 50]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.e2e_procs import free_port, with_database  # noqa: E402
from tests.e2e.harness import sim_cluster  # noqa: E402
from vglobal.client import Client  # noqa: E402

TALKER = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(name)s, annotations: {vglobal.io/clusters: %(cluster)s}}
spec:
  minAvailable: %(n)d
  tasks:
  - name: w
    replicas: %(n)d
    template:
      metadata: {annotations: {vglobal.io/sim-log-interval: 50ms}}
      spec: {containers: [{name: main, image: x, resources: {requests: {cpu: 100m}}}]}
"""
GANG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(name)s, annotations: {vglobal.io/clusters: %(cluster)s}}
spec:
  minAvailable: 4
  tasks:
  - name: w
    replicas: 4
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 1000h}}
      spec: {containers: [{name: main, image: x, resources: {requests: {cpu: 100m}}}]}
"""
CLUSTERS = ("quiet", "loud")


def cycle_totals(metrics: str) -> tuple[float, float]:
    text = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5).read().decode()
    total = float(re.search(r"^volcano_e2e_scheduling_latency_milliseconds_sum (\S+)$", text, re.M)[1])  # type: ignore[index]
    count = float(re.search(r"^volcano_e2e_scheduling_latency_milliseconds_count (\S+)$", text, re.M)[1])  # type: ignore[index]
    return total, count


def wait(cond: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


@dataclass
class Phase:
    times: dict[str, list[float]]  # cluster -> seconds from submit to all Running, per round
    ms: dict[str, float]  # cluster -> scheduling cycle milliseconds in all
    cycles: dict[str, float]  # cluster -> how many cycles
    per_round: dict[str, list[float]]  # cluster -> each round's mean cycle (ms)
    cpu: dict[str, float]  # cluster -> its agent process's CPU seconds
    wall: float  # seconds

    def cycle(self, k: str) -> float:
        return self.ms[k] / max(1.0, self.cycles[k])

    def add(self, other: Phase) -> Phase:
        return Phase(
            {k: self.times[k] + other.times[k] for k in CLUSTERS},
            {k: self.ms[k] + other.ms[k] for k in CLUSTERS},
            {k: self.cycles[k] + other.cycles[k] for k in CLUSTERS},
            {k: self.per_round[k] + other.per_round[k] for k in CLUSTERS},
            {k: self.cpu[k] + other.cpu[k] for k in CLUSTERS},
            self.wall + other.wall,
        )


NONE = Phase(
    {k: [] for k in CLUSTERS}, dict.fromkeys(CLUSTERS, 0.0), dict.fromkeys(CLUSTERS, 0.0),
    {k: [] for k in CLUSTERS}, dict.fromkeys(CLUSTERS, 0.0), 0.0,
)  # fmt: skip


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(c: Client, metrics: dict[str, str], pids: dict[str, int], tag: str, rounds: int, batch: int) -> Phase:
    """Both clusters at once: per round, ``batch`` gangs each; the agents' mean cycles over it."""
    before = {k: cycle_totals(m) for k, m in metrics.items()}
    cpu0, wall0 = {k: cpu_seconds(p) for k, p in pids.items()}, time.monotonic()
    times: dict[str, list[float]] = {k: [] for k in CLUSTERS}
    per_round: dict[str, list[float]] = {k: [] for k in CLUSTERS}
    for r in range(rounds):
        at = {k: cycle_totals(m) for k, m in metrics.items()}
        order = CLUSTERS if r % 2 == 0 else CLUSTERS[::-1]
        names = {k: [f"{tag}-{k}-{r}-{i}" for i in range(batch)] for k in CLUSTERS}
        started: dict[str, float] = {}
        for i in range(batch):
            for k in order:
                started.setdefault(k, time.monotonic())
                c.submit_job(GANG % {"name": names[k][i], "cluster": k})
        left = set(CLUSTERS)
        deadline = time.monotonic() + 120
        while left and time.monotonic() < deadline:
            for k in sorted(left):
                if all(c.get_job(n).phase == "Running" for n in names[k]):
                    times[k].append(time.monotonic() - started[k])
                    left.discard(k)
            time.sleep(0.02)
        if left:
            raise SystemExit(f"round {r}: {sorted(left)} did not run")
        for k in CLUSTERS:
            for n in names[k]:
                c.delete_job(n)
        for k, m in metrics.items():
            total, count = cycle_totals(m)
            if count > at[k][1]:
                per_round[k].append((total - at[k][0]) / (count - at[k][1]))
    after = {k: cycle_totals(m) for k, m in metrics.items()}
    return Phase(
        times,
        {k: after[k][0] - before[k][0] for k in CLUSTERS},
        {k: after[k][1] - before[k][1] for k in CLUSTERS},
        per_round,
        {k: cpu_seconds(p) - cpu0[k] for k, p in pids.items()},
        time.monotonic() - wall0,
    )


class Streams:
    """One followed stream per pod, each read by a thread of this process, while in the block."""

    def __init__(self, target: str, pods: list[str]) -> None:
        self.target, self.pods = target, pods
        self.lines = [0] * len(pods)
        self.streams: list[Any] = []
        self.stop = threading.Event()
        self.first = 0

    def _read(self, i: int, pod: str) -> None:
        with Client(self.target, timeout=3600) as reader:
            stream = reader.logs("talker-loud", pod=pod, follow=True, tail=1)
            self.streams.append(stream)
            for _ in stream:
                self.lines[i] += 1
                if self.stop.is_set():
                    return

    def since_start(self) -> int:
        return sum(self.lines) - self.first

    def __enter__(self) -> Streams:
        for i, p in enumerate(self.pods):
            threading.Thread(target=self._read, args=(i, p), daemon=True).start()
        wait(lambda: all(n > 0 for n in self.lines), 60, "every stream to deliver")
        self.first = sum(self.lines)
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for s in self.streams:
            s.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3, help="phases without and with streams, in turn")
    args = ap.parse_args()
    dburl = os.environ.get("VGLOBAL_TEST_DATABASE_URL") or sys.exit("set VGLOBAL_TEST_DATABASE_URL")
    db = f"bench_logs_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(with_database(dburl, "postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
    url = with_database(dburl, db).replace("postgresql://", "postgresql+psycopg://", 1)
    tmp = Path(tempfile.mkdtemp())
    target = f"127.0.0.1:{free_port()}"
    metrics = {k: f"127.0.0.1:{free_port()}" for k in CLUSTERS}
    py = [sys.executable, "-m", "vglobal"]
    procs = [
        subprocess.Popen([*py, "hub", "--listen", target, "--database-url", url], stdout=(tmp / "hub.log").open("w"), stderr=subprocess.STDOUT),
    ]  # fmt: skip
    for k in CLUSTERS:
        (tmp / f"{k}.yaml").write_text(sim_cluster(k, nodes=8, cpu="64"))
        procs.append(subprocess.Popen(
            [*py, "--hub", target, "agent", "--sim", str(tmp / f"{k}.yaml"), "--heartbeat-interval", "500ms",
             "--metrics-listen", metrics[k]],
            stdout=(tmp / f"agent-{k}.log").open("w"), stderr=subprocess.STDOUT,
        ))  # fmt: skip
    pids = {k: procs[1 + i].pid for i, k in enumerate(CLUSTERS)}
    load0 = os.getloadavg()
    try:
        with Client(target, timeout=30) as c:
            wait(lambda: _ok(c), 120, "the hub and the agents")
            for k in CLUSTERS:
                c.submit_job(TALKER % {"n": args.streams, "name": f"talker-{k}", "cluster": k})
            for k in CLUSTERS:
                wait(lambda k=k: (j := c.get_job(f"talker-{k}")).phase == "Running" and len(j.placements) == args.streams,
                     120, f"talker-{k}")  # fmt: skip
            pods = [p.pod for p in c.get_job("talker-loud").placements]
            base, load, delivered, streaming = NONE, NONE, 0, 0.0
            # Without and with streams in turn (A, B, A, B, ...), so a change of the machine's load
            # over the run falls on both.
            for rep in range(args.reps):
                base = base.add(phase(c, metrics, pids, f"base{rep}", args.rounds, args.batch))
                with Streams(target, pods) as streams:
                    t0 = time.monotonic()
                    load = load.add(phase(c, metrics, pids, f"load{rep}", args.rounds, args.batch))
                    streaming += time.monotonic() - t0
                    delivered += streams.since_start()
            rate = delivered / streaming
        report(args, base, load, rate, load0, os.getloadavg())
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        with psycopg.connect(with_database(dburl, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def report(
    args: argparse.Namespace, base: Phase, load: Phase, rate: float,
    load0: tuple[float, float, float], load1: tuple[float, float, float],
) -> None:  # fmt: skip
    med = statistics.median
    print(f"pods writing: 2 x {args.streams} x 20 lines/s; {args.reps} x (without, with streams) x {args.rounds} rounds "
          f"x {args.batch} gangs of 4 pods per cluster")  # fmt: skip
    print(f"load average at start {load0[0]:.1f}, at end {load1[0]:.1f} ({os.cpu_count()} cores)")
    for tag, ph in (("no stream", base), (f"{args.streams} -f streams of loud ({rate:.0f} lines/s)", load)):
        print(f"{tag}: " + "; ".join(
            f"{k}: submit->Running median {med(ph.times[k]):.3f}s, mean cycle {ph.cycle(k):.2f} ms "
            f"({ph.cycles[k]:.0f} cycles), median of round means {med(ph.per_round[k]):.2f} ms, "
            f"agent CPU {100 * ph.cpu[k] / ph.wall:.1f}% of a core"
            for k in CLUSTERS))  # fmt: skip

    def change(f: object) -> str:
        got = (f(load, "loud") / f(load, "quiet")) / (f(base, "loud") / f(base, "quiet"))  # type: ignore[operator]
        return f"{100 * (got - 1):+.1f}%"

    print("loud against quiet, with streams over without: "
          f"mean cycle {change(lambda p, k: p.cycle(k))}, "
          f"median of round means {change(lambda p, k: med(p.per_round[k]))}, "
          f"submit->Running {change(lambda p, k: med(p.times[k]))}, "
          f"agent CPU {change(lambda p, k: p.cpu[k])}")  # fmt: skip


def _ok(c: Client) -> bool:
    try:
        return len(c.list_clusters()) == 2
    except Exception:
        return False


if __name__ == "__main__":
    main()
