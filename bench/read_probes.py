"""What a long read in a hub's process costs the rest of it, measured beside the read
(`bench/scale.py snapshot`): how late a thread that asks to wake every 5 ms wakes (it waits for
the interpreter as the hub's API threads do), the round trips of a gRPC health check called every
10 ms from another process on a server in the reading process, and the Postgres backend's CPU."""

from __future__ import annotations

import sys
import threading
import time

import psutil


class StallProbe:
    """A thread that asks to wake every 5 ms while the read runs, as a server thread answering the
    API would: how late it wakes is how long the read kept the interpreter (the GIL) from it."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            time.sleep(0.005)
            self.late.append(time.perf_counter() - t - 0.005)

    def __enter__(self) -> StallProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        if not self.late:
            return "-"
        got = sorted(self.late)
        p99 = got[min(len(got) - 1, int(0.99 * len(got)))]
        return f"{p99 * 1000:.0f} / {got[-1] * 1000:.0f} ms"


# The client of ApiProbe, in its own process: a health check every 10 ms until its input closes,
# then every round trip's seconds on one line.
_API_CLIENT = """
import sys, threading, time
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{sys.argv[1]}"))
stub.Check(health_pb2.HealthCheckRequest(), timeout=60)
print("ready", flush=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
got = []
while not done.is_set():
    t = time.perf_counter()
    stub.Check(health_pb2.HealthCheckRequest(), timeout=600)
    got.append(time.perf_counter() - t)
    time.sleep(0.01)
print(" ".join(f"{x:.5f}" for x in got), flush=True)
"""


class ApiProbe:
    """A gRPC server in this process (the standard health service on a thread pool, as an API
    beside the read) called every 10 ms from another process while the read runs: each call's
    round trip, as a caller of the hub's API would see it."""

    def __enter__(self) -> ApiProbe:
        import subprocess
        from concurrent import futures

        import grpc
        from grpc_health.v1 import health, health_pb2_grpc

        self.server = grpc.server(futures.ThreadPoolExecutor(4))
        health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _API_CLIENT, str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        self.calls: list[float] = []
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self.proc.communicate("")
        self.calls = [float(x) for x in out.split()]
        self.server.stop(0)

    def summary(self) -> str:
        if not self.calls:
            return "-"
        got = sorted(self.calls)
        q = [got[min(len(got) - 1, int(f * len(got)))] * 1000 for f in (0.5, 0.99)]
        return f"{q[0]:.0f} / {q[1]:.0f} / {got[-1] * 1000:.0f} ms ({len(got)})"


def backend_cpu(session: object) -> tuple[int, float]:
    """The Postgres backend serving this session, and its CPU seconds so far (0 if not readable:
    a server on another machine)."""
    import sqlalchemy as sa

    pid = int(session.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())  # type: ignore[attr-defined]
    try:
        t = psutil.Process(pid).cpu_times()
        return pid, t.user + t.system
    except (psutil.Error, OSError):
        return pid, 0.0
