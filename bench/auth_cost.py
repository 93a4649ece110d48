"""What TLS and token authentication cost on the submit path: submits/s with and without, same run.

    .venv/bin/python bench/auth_cost.py [--submits 2000] [--clients 8] [--rounds 3]

Two hub processes share one embedded PostgreSQL: one plaintext on loopback with no auth config (the
open hub), one with TLS and --auth-config (certificates and a token from `vglobal certs init`).
Each round sends the same number of SubmitJob calls to each hub from --clients threads, each
thread on its own channel (a new TLS session per thread, then reused as a real client would), the
two hubs alternating so drift in the machine's load falls on both alike. Reported: submits/s per
hub per round and the median, and the TLS+auth hub's rate relative to the open one.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from vglobal.cli.certs import UserSpec, init_certs
from vglobal.client import Client
from vglobal.dial import Dial
from vglobal.store.embedded import start_embedded

JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  minAvailable: 1
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_hub(url: str, log: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    target = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "VGLOBAL_DATABASE_URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vglobal", "hub", "--listen", target, "--rate-limit", "0", *extra],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    return proc, target


def wait_ready(dial: Dial) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with Client(dial=dial, timeout=2, retries=1) as c:
                c.list_queues()
                return
        except Exception:
            time.sleep(0.3)
    raise SystemExit(f"hub at {dial.target} did not come up")


def submit_round(dial: Dial, prefix: str, submits: int, clients: int) -> float:
    """submits/s for ``submits`` SubmitJob calls spread over ``clients`` threads."""
    per = submits // clients
    barrier = threading.Barrier(clients + 1)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        with Client(dial=dial, timeout=30, retries=1) as c:
            c.list_queues()  # connect (and handshake) before the clock starts
            barrier.wait()
            try:
                for i in range(per):
                    c.submit_job(JOB.format(name=f"{prefix}-{k}-{i}"))
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise SystemExit(f"submits to {dial.target} failed: {errors[0]}")
    return per * clients / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--submits", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vglobal-auth-bench-"))
    url, pg = start_embedded(work / "db")
    certs = work / "certs"
    init_certs(certs, "localhost", [], [UserSpec.parse("bench:admin")], days=1)
    token = (certs / "token-bench").read_text().strip()
    plain_proc, plain_target = start_hub(url, work / "plain.log")
    tls_proc, tls_target = start_hub(
        url, work / "tls.log",
        "--tls-cert", str(certs / "hub.crt"), "--tls-key", str(certs / "hub.key"),
        "--auth-config", str(certs / "auth.yaml"),
    )  # fmt: skip
    plain = Dial(plain_target)
    secure = Dial(tls_target, ca_file=certs / "ca.crt", token=token)
    try:
        wait_ready(plain)
        wait_ready(secure)
        rates: dict[str, list[float]] = {"plaintext, no auth": [], "TLS + token": []}
        for r in range(args.rounds):
            for label, dial in (("plaintext, no auth", plain), ("TLS + token", secure)):
                rate = submit_round(dial, f"r{r}-{label[:3].lower()}", args.submits, args.clients)
                rates[label].append(rate)
                print(f"round {r + 1}: {label:<19} {rate:8.0f} submits/s", flush=True)
        medians = {label: statistics.median(v) for label, v in rates.items()}
        for label, m in medians.items():
            print(f"median {label:<19} {m:8.0f} submits/s")
        ratio = medians["TLS + token"] / medians["plaintext, no auth"]
        print(f"TLS + token: {ratio:.2f}x the plaintext rate ({(1 - ratio) * 100:+.0f}% cost)")
    finally:
        for p in (plain_proc, tls_proc):
            p.terminate()
            p.wait(timeout=20)
        del pg  # the embedded PostgreSQL stops with its last handle


if __name__ == "__main__":
    main()
