"""Benchmark of the local scheduler: one cluster, many gangs, the default agent conf.

Prints pods placed per second for the vectorised session and, side by side, for the same
session with per-node scoring in a plain Python loop. Run from the repository root:

    .venv/bin/python bench/scheduler.py                      # 5,000 nodes, 1,000 gangs x 50 pods
    .venv/bin/python bench/scheduler.py --nodes 500 --gangs 100   # quick run
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    DEFAULT_AGENT_CONF,
    ClusterSnapshot,
    JobSpec,
    NodeSpec,
    QueueSpec,
    TaskSpec,
    run_cycle,
)

GI = 1024**3


def build(nodes: int, gangs: int, per_gang: int) -> ClusterSnapshot:
    """Nodes of 3 shapes; gangs of 4 shapes, sized so that all pods fit (about 80% of the cluster)."""
    shapes = [
        {"cpu": 64_000, "memory": 256 * GI, "pods": 110, "nvidia.com/gpu": 8_000},
        {"cpu": 96_000, "memory": 384 * GI, "pods": 110},
        {"cpu": 32_000, "memory": 128 * GI, "pods": 110},
    ]
    node_specs = tuple(
        NodeSpec(f"node-{i:05d}", ResourceVector(shapes[i % 3]), labels={"zone": f"z{i % 4}"})
        for i in range(nodes)
    )
    requests = [
        {"cpu": 4_000, "memory": 16 * GI},
        {"cpu": 2_000, "memory": 8 * GI},
        {"cpu": 1_000, "memory": 4 * GI, "nvidia.com/gpu": 1_000},
        {"cpu": 500, "memory": 2 * GI},
    ]
    jobs = []
    for g in range(gangs):
        uid = f"job-{g:05d}"
        req = ResourceVector(requests[g % 4])
        tasks = tuple(
            TaskSpec(uid=f"{uid}-w-{k}", name=f"{uid}-w-{k}", job_uid=uid, role="w", index=k, request=req)
            for k in range(per_gang)
        )
        jobs.append(
            JobSpec(
                uid=uid,
                name=uid,
                namespace="default",
                queue="default",
                priority=0,
                min_available=per_gang,
                task_min_available={"w": per_gang},
                creation=g,
                tasks=tasks,
                podgroup_phase="Inqueue",
            )
        )
    return ClusterSnapshot(node_specs, tuple(jobs), (QueueSpec("default"),))


def measure(state: ClusterSnapshot, vectorized: bool) -> tuple[int, float]:
    start = time.perf_counter()
    result = run_cycle(state, DEFAULT_AGENT_CONF, vectorized=vectorized)
    return len(result.binds), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gangs", type=int, default=1000)
    parser.add_argument("--pods-per-gang", type=int, default=50)
    parser.add_argument(
        "--loop-gangs", type=int, default=100, help="gangs in the Python-loop comparison run (default 100)"
    )
    args = parser.parse_args(argv)
    print(
        "command:",
        " ".join([".venv/bin/python", "bench/scheduler.py", *sys.argv[1:]]),
    )
    state = build(args.nodes, args.gangs, args.pods_per_gang)
    pods = args.gangs * args.pods_per_gang
    print(f"cluster: {args.nodes} nodes, {args.gangs} gangs x {args.pods_per_gang} pods = {pods} pods")
    tiers = " | ".join(", ".join(p.name for p in tier) for tier in DEFAULT_AGENT_CONF.tiers)
    print(f"conf: default agent conf, actions {', '.join(DEFAULT_AGENT_CONF.actions)}; tiers {tiers}")
    placed, seconds = measure(state, vectorized=True)
    print(f"vectorised scoring : {placed} pods placed in {seconds:.2f} s = {placed / seconds:,.0f} pods/s")
    # The Python-loop session is ~10x slower: by default it runs on the first gangs only, and the
    # vectorised session is re-run on the very same input so the ratio compares like with like.
    loop_gangs = min(args.gangs, args.loop_gangs)
    sub = build(args.nodes, loop_gangs, args.pods_per_gang)
    sub_placed, sub_seconds = measure(sub, vectorized=True)
    loop_placed, loop_seconds = measure(sub, vectorized=False)
    sub_rate, loop_rate = sub_placed / sub_seconds, loop_placed / loop_seconds
    label = f"same {loop_gangs} gangs,"
    print(f"{label} vectorised : {sub_placed} pods in {sub_seconds:.2f} s = {sub_rate:,.0f} pods/s")
    print(f"{label} python loop: {loop_placed} pods in {loop_seconds:.2f} s = {loop_rate:,.0f} pods/s")
    print(f"speed-up of vectorised scoring: {sub_rate / loop_rate:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
