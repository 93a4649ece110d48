"""50 concurrent `vglobal logs -f` streams against one sim agent: does its scheduling slow down?

A real hub and a real sim agent (processes) on a fresh database. A 50-pod job writes a line every
50 ms per pod (1,000 lines/s in all). Then, twice (without streams, then with 50 followed streams
of its pods, one per pod, read by this process), ROUNDS batches of small gang jobs are submitted and
each batch's time from submit to all Running is taken; the agent's own scheduling-cycle histogram
(/metrics) gives the mean cycle in each phase.

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
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.e2e_procs import free_port, with_database  # noqa: E402
from tests.e2e.harness import sim_cluster  # noqa: E402
from vglobal.client import Client  # noqa: E402

TALKER = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: talker}
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
metadata: {name: %(name)s}
spec:
  minAvailable: 4
  tasks:
  - name: w
    replicas: 4
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 1000h}}
      spec: {containers: [{name: main, image: x, resources: {requests: {cpu: 100m}}}]}
"""


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


def phase(c: Client, metrics: str, tag: str, rounds: int, batch: int) -> tuple[list[float], float]:
    """Per round, seconds from submitting ``batch`` gangs to all of them Running; the mean cycle (ms)."""
    s0, n0 = cycle_totals(metrics)
    times = []
    for r in range(rounds):
        names = [f"{tag}-{r}-{i}" for i in range(batch)]
        started = time.monotonic()
        for name in names:
            c.submit_job(GANG % {"name": name})
        wait(lambda names=names: all(c.get_job(n).phase == "Running" for n in names), 120, f"round {r} to run")
        times.append(time.monotonic() - started)
        for name in names:
            c.delete_job(name)
    s1, n1 = cycle_totals(metrics)
    return times, (s1 - s0) / max(1.0, n1 - n0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--batch", type=int, default=5)
    args = ap.parse_args()
    base = os.environ.get("VGLOBAL_TEST_DATABASE_URL") or sys.exit("set VGLOBAL_TEST_DATABASE_URL")
    db = f"bench_logs_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(with_database(base, "postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
    url = with_database(base, db).replace("postgresql://", "postgresql+psycopg://", 1)
    tmp = Path(tempfile.mkdtemp())
    target, metrics = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    (tmp / "east.yaml").write_text(sim_cluster("east", nodes=8, cpu="64"))
    py = [sys.executable, "-m", "vglobal"]
    procs = [
        subprocess.Popen([*py, "hub", "--listen", target, "--database-url", url], stdout=(tmp / "hub.log").open("w"), stderr=subprocess.STDOUT),
        subprocess.Popen([*py, "--hub", target, "agent", "--sim", str(tmp / "east.yaml"), "--heartbeat-interval", "500ms", "--metrics-listen", metrics], stdout=(tmp / "agent.log").open("w"), stderr=subprocess.STDOUT),
    ]  # fmt: skip
    stop = threading.Event()
    try:
        with Client(target, timeout=30) as c:
            wait(lambda: _ok(c), 120, "the hub and the agent")
            c.submit_job(TALKER % {"n": args.streams})
            wait(lambda: (j := c.get_job("talker")).phase == "Running" and len(j.placements) == args.streams, 120, "talker")
            pods = [p.pod for p in c.get_job("talker").placements]
            base_times, base_cycle = phase(c, metrics, "base", args.rounds, args.batch)
            lines = [0] * len(pods)
            streams = []

            def read(i: int, pod: str) -> None:
                with Client(target, timeout=3600) as reader:
                    stream = reader.logs("talker", pod=pod, follow=True, tail=1)
                    streams.append(stream)
                    for _ in stream:
                        lines[i] += 1
                        if stop.is_set():
                            return

            threads = [threading.Thread(target=read, args=(i, p), daemon=True) for i, p in enumerate(pods)]
            for t in threads:
                t.start()
            wait(lambda: all(n > 0 for n in lines), 60, "every stream to deliver")
            before = sum(lines)
            t0 = time.monotonic()
            load_times, load_cycle = phase(c, metrics, "load", args.rounds, args.batch)
            rate = (sum(lines) - before) / (time.monotonic() - t0)
            stop.set()
            for s in streams:
                s.close()
        print(f"pods writing: {args.streams} x 20 lines/s; rounds: {args.rounds} x {args.batch} gangs of 4 pods")
        print(f"without streams: submit->Running median {statistics.median(base_times):.3f}s, mean cycle {base_cycle:.2f} ms")
        print(f"with {args.streams} -f streams ({rate:.0f} lines/s delivered): submit->Running median "
              f"{statistics.median(load_times):.3f}s, mean cycle {load_cycle:.2f} ms")  # fmt: skip
        print(f"change: {100 * (statistics.median(load_times) / statistics.median(base_times) - 1):+.1f}% (submit->Running), "
              f"{100 * (load_cycle / base_cycle - 1):+.1f}% (cycle)")  # fmt: skip
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        with psycopg.connect(with_database(base, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def _ok(c: Client) -> bool:
    try:
        return len(c.list_clusters()) == 1
    except Exception:
        return False


if __name__ == "__main__":
    main()
