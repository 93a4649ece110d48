"""CPU of one agent cycle (``ClusterRuntime.step``, simulated cluster of 50 nodes, virtual clock)
with N finished runs kept for the agent's retention, ~100 live jobs and one new job per cycle: what
a soak's agent pays every cycle for the runs it keeps (at R jobs/s it keeps R x 600 of them).

    .venv/bin/python bench/agent_retention.py --kept 0,30000 [--code DIR]   # DIR: a baseline tree
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--kept", default="0,30000", help="finished runs kept, one measurement each")
ap.add_argument("--code", default=str(Path(__file__).resolve().parent.parent), help="the source tree measured")
args = ap.parse_args()
sys.path[:0] = [args.code, f"{args.code}/tests/unit/agent"]

from conftest import job_doc, sim_cluster_doc, task  # noqa: E402

from vglobal.agent.backends.sim import SimBackend  # noqa: E402
from vglobal.agent.backends.sim_cluster import parse_sim_cluster  # noqa: E402
from vglobal.agent.runtime import ClusterRuntime  # noqa: E402
from vglobal.clock import VirtualClock  # noqa: E402
from vglobal.model.job import parse_job  # noqa: E402

clock = VirtualClock()
runtime = ClusterRuntime(SimBackend(parse_sim_cluster(sim_cluster_doc(50, "220"))), clock)
numbers = itertools.count(1)


def start(duration: str) -> None:
    n = next(numbers)
    job = parse_job(job_doc(task("t", cpu="1", duration=duration), name=f"j{n}"))
    runtime.controller.start(f"u{n}", 1, job, queue=job.queue)


for kept in (int(k) for k in args.kept.split(",")):
    while sum(1 for r in runtime.runs.values() if r.finished) < kept:
        for _ in range(2000):
            start("1s")
        runtime.step()
        clock.advance_to(clock.now() + 2)
        runtime.step()
    for _ in range(100):
        start("1000s")
    runtime.step()
    cpu = time.process_time()
    for _ in range(20):
        start("1000s")
        clock.advance_to(clock.now() + 0.2)
        runtime.step()
    finished = sum(1 for r in runtime.runs.values() if r.finished)
    print(f"{finished} finished runs kept, {len(runtime.runs) - finished} live: "
          f"{(time.process_time() - cpu) / 20 * 1000:.1f} ms CPU a cycle")  # fmt: skip
