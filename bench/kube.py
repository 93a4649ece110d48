"""Pods created and bound per second by one agent with the kube backend, beside the sim backend on
the same workload.

The agent's own code (job controller, local scheduler, kube backend with its informers and writer
pool) runs in this process on a real clock; the Kubernetes API emulator (tests/kubeapi) runs as its
own process with 5,000 nodes and its kubelet off (pods stay bound and Pending: the figure is about
creating and binding). 1,000 gangs of 20 one-cpu pods are started at once; a pod counts when the
agent's pod informer shows it on a node. The sim backend then runs the same jobs on the same nodes.
Run from the repository root:

    .venv/bin/python bench/kube.py                               # 5,000 nodes, 1,000 gangs x 20
    .venv/bin/python bench/kube.py --kube-qps 500 --gangs 100    # the client-side limit in force
    .venv/bin/python bench/kube.py --nodes 500 --gangs 100       # quick run
    .venv/bin/python bench/kube.py --pin --profile DIR           # emulator on core 1, agent on core 0

``--pin`` does what ``taskset`` does: this process (the agent) on core 0 and every thread of the
emulator on core 1, so each has a core of its own, as far as other work on the machine allows.
``--profile DIR`` records the agent with py-spy (``--gil``: where its CPU goes) while pods are made.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psutil

from tests.kubeapi import EmulatorProcess
from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.agent.kube.api import KubeApi, connect
from vglobal.agent.kube.backend import KubeBackend, KubeOptions
from vglobal.agent.runtime import ClusterRuntime
from vglobal.clock import RealClock
from vglobal.model.job import Job, parse_job

ALLOCATABLE = {"cpu": "32", "memory": "128Gi", "pods": "110"}


def jobs(gangs: int, size: int) -> list[Job]:
    out = []
    for i in range(gangs):
        doc = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": f"gang-{i:04d}", "namespace": "default"},
            "spec": {
                "minAvailable": size,
                "tasks": [
                    {
                        "name": "w",
                        "replicas": size,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "c",
                                        "image": "x",
                                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                    }
                                ],
                            }
                        },
                    }
                ],
            },
        }
        out.append(parse_job(doc))
    return out


def drive(
    runtime: ClusterRuntime, work: list[Job], done: Any, timeout: float, cycle: float
) -> tuple[float, float]:
    """Start every job, step every ``cycle`` seconds (the agent's main loop) until ``done()``;
    (wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i, job in enumerate(work):
        runtime.controller.start(f"uid-{i}", 1, job)
    deadline = wall + timeout
    while not done():
        if time.perf_counter() > deadline:
            raise SystemExit(f"not all pods bound within {timeout:g}s")
        began = time.perf_counter()
        runtime.step()
        time.sleep(max(0.0, cycle - (time.perf_counter() - began)))
    return time.perf_counter() - wall, time.process_time() - cpu


def run_kube(args: argparse.Namespace, work: list[Job], total: int) -> dict[str, float]:
    alloc = ",".join(f"{k}={v}" for k, v in ALLOCATABLE.items())
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmulatorProcess(
            Path(tmp) / "kubeconfig",
            *("--nodes", str(args.nodes), "--node-allocatable", alloc, "--no-kubelet"),
            *("--history", str(4 * total)),
        ) as emu,
    ):
        if args.pin:
            pin_all_threads(emu.pid, 1)
        conn = connect(kubeconfig=str(emu.kubeconfig), pool=args.writers + 8)
        api = KubeApi(conn.client, qps=args.kube_qps, burst=args.kube_burst)
        backend = KubeBackend(api, KubeOptions(cluster="bench", writers=args.writers))
        backend.start(timeout=300)
        runtime = ClusterRuntime(backend, RealClock())
        server = psutil.Process(emu.pid)
        server_cpu = sum(server.cpu_times()[:2])

        def done() -> bool:
            return sum(1 for t in backend.tracker.pods.values() if t.placed) >= total

        with profiled(args.profile):
            wall, cpu = drive(runtime, work, done, args.timeout, args.cycle)
        server_cpu = sum(server.cpu_times()[:2]) - server_cpu
        rss = psutil.Process().memory_info().rss
        stats = backend.writer.stats
        backend.stop()
        return {
            "wall": wall,
            "cpu": cpu,
            "server_cpu": server_cpu,
            "rss": rss,
            "requests": stats.sent,
            "retried": stats.retried,
        }


def pin_all_threads(pid: int, core: int) -> None:
    """``taskset -a -p``: every thread of ``pid`` on ``core`` only."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), {core})


@contextlib.contextmanager
def profiled(out: str) -> Iterator[None]:
    """py-spy on this process (GIL-holding samples) for the block; raw stacks and a summary in ``out``."""
    if not out:
        yield
        return
    from e2e_report import summarize_profile

    Path(out).mkdir(parents=True, exist_ok=True)
    raw = Path(out) / "kube-agent.txt"
    spy = str(Path(sys.executable).parent / "py-spy")
    cmd = [spy, "record", "--pid", str(os.getpid()), "--format", "raw", "--rate", "50"]
    proc = subprocess.Popen(
        [*cmd, "--nonblocking", "--gil", "-o", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield
    finally:
        proc.send_signal(2)
        proc.wait(timeout=60)
        if raw.exists():
            summary = summarize_profile(raw, top=20)
            (Path(out) / "kube-agent.summary").write_text(summary)
            print(summary, flush=True)


def run_sim(args: argparse.Namespace, work: list[Job], total: int) -> float:
    doc = {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": "bench"},
        "spec": {"nodeGroups": [{"name": "node", "count": args.nodes, "allocatable": ALLOCATABLE}]},
    }
    backend = SimBackend(parse_sim_cluster(doc))
    runtime = ClusterRuntime(backend, RealClock())

    def done() -> bool:
        return sum(1 for st in backend.pods().values() if st.node is not None) >= total

    wall, _ = drive(runtime, work, done, args.timeout, args.cycle)
    return wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--gangs", type=int, default=1000)
    p.add_argument("--size", type=int, default=20)
    p.add_argument("--writers", type=int, default=8, help="the agent's writer threads")
    p.add_argument("--kube-qps", type=float, default=0.0, help="client-side limit (0 = none)")
    p.add_argument("--kube-burst", type=int, default=100)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument(
        "--cycle", type=float, default=0.2, help="seconds between the agent's cycles (as the daemon)"
    )
    p.add_argument("--no-sim", action="store_true")
    p.add_argument("--pin", action="store_true", help="agent on core 0, emulator on core 1 (taskset)")
    p.add_argument("--profile", default="", help="py-spy the agent into this directory")
    args = p.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {0})  # before any thread starts: they inherit it
    work = jobs(args.gangs, args.size)
    total = args.gangs * args.size
    k = run_kube(args, work, total)
    print(
        f"kube backend: {total} pods on {args.nodes} nodes created and bound in {k['wall']:.1f}s = "
        f"{total / k['wall']:.0f} pods/s (kube-qps {args.kube_qps:g}, {args.writers} writers)"
    )
    print(
        f"  agent CPU {k['cpu']:.1f}s ({k['cpu'] / total * 1e3:.2f} ms/pod), emulator CPU {k['server_cpu']:.1f}s "
        f"({k['server_cpu'] / total * 1e3:.2f} ms/pod), {k['requests']:.0f} requests ({k['retried']:.0f} retried), "
        f"agent RSS {k['rss'] / 2**20:.0f} MiB, load average {os.getloadavg()[0]:.1f}"
        + (" (pinned: agent core 0, emulator core 1)" if args.pin else "")
    )
    if not args.no_sim:
        s = run_sim(args, work, total)
        print(
            f"sim backend:  {total} pods bound in {s:.1f}s = {total / s:.0f} pods/s (kube/sim {s / k['wall']:.2f})"
        )


if __name__ == "__main__":
    main()
