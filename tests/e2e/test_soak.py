"""A short soak (the test form of bench/soak.py): a steady rate of mixed short jobs for 12 s
through a hub with retention on and two simulated agents. Every job is seen Completed on a watch,
each ran once by the agents' own logs, retention removed the finished ones as it went, and the
time to Running did not grow along the run (no backlog building up)."""

from __future__ import annotations

import statistics
import threading
import time

import pytest
import sqlalchemy as sa

from tests.e2e.chaos import MANIFEST, runs_in_logs
from tests.e2e.harness import System, sim_cluster, wait_for
from vglobal.client import Client

pytestmark = pytest.mark.e2e

RATE = 20.0  # jobs/s, in calls of BATCH
SECONDS = 12.0
BATCH = 5
DURATIONS = ("200ms", "1s", "2s")


def test_a_steady_rate_with_retention_loses_nothing_runs_nothing_twice_and_keeps_up(system: System) -> None:
    system.start_hub("--finished-job-ttl", "3s")
    for name in ("east", "west"):
        system.start_agent(name, sim_cluster(name, nodes=4, cpu="100"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 60, "agents registered", system)

    running: dict[str, float] = {}
    completed: set[str] = set()
    with Client(system.target, timeout=30) as watching:
        watch = watching.watch_jobs()

        def follow() -> None:
            for event in watch:
                if event.job.phase == "Running":
                    running.setdefault(event.job.name, time.monotonic())
                elif event.job.phase == "Completed":
                    running.setdefault(event.job.name, time.monotonic())
                    completed.add(event.job.name)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        submitted: dict[str, float] = {}
        jobs = int(RATE * SECONDS)
        with Client(system.target, timeout=30) as client:
            start = time.monotonic()
            for first in range(0, jobs, BATCH):
                due = start + first / RATE
                time.sleep(max(0.0, due - time.monotonic()))
                names = [f"s{i}" for i in range(first, first + BATCH)]
                client.submit_jobs([(MANIFEST % (n, DURATIONS[i % 3]), n) for i, n in enumerate(names)])
                submitted.update(dict.fromkeys(names, due))
        wait_for(lambda: len(completed & submitted.keys()) == jobs, 90, "every job Completed", system)
        watch.close()

    runs = runs_in_logs({n: system.whole_log(f"agent-{n}") for n in ("east", "west")})
    assert {n: [g for _, g in runs.get(n, [])] for n in submitted} == {n: [1] for n in submitted}
    engine = sa.create_engine(system.database_url)

    def stored() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one())

    try:
        wait_for(lambda: stored() < jobs // 4, 60, "retention to remove the finished jobs", system)
    finally:
        engine.dispose()
    # The last third of the run reached Running about as fast as the first: a generous bound, so
    # a busy machine passes, while a backlog growing with the run (a leak, a cycle costing more
    # with each job stored) does not.
    waits = [running[n] - submitted[n] for n in submitted]
    third = jobs // 3
    first, last = statistics.median(waits[:third]), statistics.median(waits[-third:])
    assert last <= 3 * first + 2.0, (first, last)
