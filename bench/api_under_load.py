"""How fast the API answers beside what should not slow it: idle agent streams, and fuzzing.

    .venv/bin/python bench/api_under_load.py [--streams 200] [--seconds 3] [--rounds 3]

One hub on an embedded PostgreSQL (rate limit off). Two measurements, each printed per round:
- ListJobs p50/p99 alone, then with --streams agent streams open that never send Register (within
  the hub's register timeout, raised so that they stay open for the round);
- Health/Check latency (p50/p99/max, asked every 0.2 s) while the fuzzing of tests/e2e/test_fuzz.py
  sends every RPC its hypothesis-made and random-byte requests, and how long that fuzzing took.
The functional side of both (ListJobs answers, Health answers, nothing breaks) is asserted by
tests/e2e/test_security.py and tests/e2e/test_fuzz.py; the figures are this script's.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from tests.e2e.harness import idle_agent_streams
from tests.e2e.test_fuzz import Health, Outcomes, fuzz_everything
from vglobal.client import Client
from vglobal.store.embedded import start_embedded


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_hub(url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    target = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "VGLOBAL_DATABASE_URL": url, "VGLOBAL_REGISTER_TIMEOUT": "600"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vglobal", "hub", "--listen", target, "--rate-limit", "0"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with Client(target, timeout=2, retries=1) as c:
                c.list_jobs()
                return proc, target
        except Exception:
            time.sleep(0.3)
    raise SystemExit(f"hub at {target} did not come up; see {log}")


def quantiles(took: list[float]) -> str:
    q = statistics.quantiles(took, n=100, method="inclusive")
    return f"p50 {q[49] * 1000:6.1f} ms  p99 {q[98] * 1000:6.1f} ms  max {max(took) * 1000:6.1f} ms"


def list_jobs_for(client: Client, seconds: float) -> list[float]:
    took = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        client.list_jobs()
        took.append(time.perf_counter() - started)
    return took


def idle_streams_round(target: str, streams: int, seconds: float) -> None:
    with Client(target, timeout=30, retries=1) as c:
        alone = list_jobs_for(c, seconds)
        with idle_agent_streams(target, streams, 600) as calls:
            time.sleep(0.5)  # let the streams open
            beside = list_jobs_for(c, seconds)
            refused = sum(1 for call in calls if call.done())
    print(f"  ListJobs alone             {quantiles(alone)}  ({len(alone)} calls)")
    print(f"  ListJobs, {streams} idle streams {quantiles(beside)}  ({len(beside)} calls, {refused} refused)")


def fuzz_round(target: str) -> None:
    outcomes = Outcomes()
    started = time.monotonic()
    with grpc.insecure_channel(target) as channel, Health(target) as health:
        fuzz_everything(channel, outcomes)
    took = time.monotonic() - started
    print(f"  Health under fuzzing       {quantiles(health.took)}  ({health.checks} checks)")
    print(
        f"  fuzzing took {took:.1f} s; {len(health.failures)} Health failures, {len(outcomes.bad)} bad answers"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vglobal-api-load-"))
    url, _pg = start_embedded(work / "db")
    proc, target = start_hub(url, work / "hub.log")
    try:
        print(f"load average {os.getloadavg()[0]:.1f}")
        for r in range(args.rounds):
            print(f"round {r + 1}", flush=True)
            idle_streams_round(target, args.streams, args.seconds)
            fuzz_round(target)
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


if __name__ == "__main__":
    main()
