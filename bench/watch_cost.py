"""What one WatchJobs stream costs the hub: memory and idle CPU per open watch, which sizes the
default of --max-watches.

    .venv/bin/python bench/watch_cost.py --database-url URL [--watches 200] [--idle 20]

Starts an open hub on loopback on the given (empty or migrated) database, measures its resident
memory and threads, opens --watches streams from one channel (each reads its first bookmark, so
it is being served), waits, measures again, then measures the CPU the hub spends over --idle
seconds while the watches wait (each wakes for a bookmark every 5 s). Prints the figures per watch.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time

import grpc
import psutil

from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.dial import Dial


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--idle", type=float, default=20.0)
    args = parser.parse_args()
    target = f"127.0.0.1:{free_port()}"
    n = args.watches
    hub = subprocess.Popen(
        [sys.executable, "-m", "vglobal", "hub", "--listen", target, "--database-url", args.database_url,
         "--rate-limit", "0", "--max-watches", str(n + 8), "--max-watches-per-caller", str(n + 8)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    calls = []
    try:
        channel = Dial(target).channel()
        grpc.channel_ready_future(channel).result(timeout=120)
        stub = jobs_pb2_grpc.JobServiceStub(channel)
        proc = psutil.Process(hub.pid)
        time.sleep(3.0)
        before, threads_before = proc.memory_info().rss, proc.num_threads()
        for _ in range(n):
            call = stub.WatchJobs(jobs_pb2.WatchJobsRequest(), timeout=3600)
            next(call)
            calls.append(call)
        time.sleep(3.0)
        after, threads_after = proc.memory_info().rss, proc.num_threads()
        cpu = proc.cpu_times()
        time.sleep(args.idle)
        cpu_after = proc.cpu_times()
        spent = (cpu_after.user + cpu_after.system) - (cpu.user + cpu.system)
        print(f"watches: {n}")
        print(f"hub RSS: {before / 2**20:.1f} MiB before, {after / 2**20:.1f} MiB with the watches")
        print(f"per watch: {(after - before) / n / 1024:.0f} KiB, {(threads_after - threads_before) / n:.2f} threads")
        print(f"idle CPU with the watches open: {spent / args.idle * 100:.2f}% of one core "
              f"({spent / args.idle / n * 1e6:.0f} µs/s per watch)")  # fmt: skip
    finally:
        for call in calls:
            call.cancel()
        hub.terminate()
        hub.wait(timeout=30)


if __name__ == "__main__":
    main()
