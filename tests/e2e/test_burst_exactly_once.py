"""A burst of 10,000 submissions with the hub killed (SIGKILL) in the middle of it: the client
submits again what it was not told was stored (same request ids), and in the end every job exists
once and ran once, to completion."""

from __future__ import annotations

import signal

import sqlalchemy as sa

from tests.e2e.chaos import Burst, burst_items
from tests.e2e.harness import System, sim_cluster, wait_for

JOBS = 10_000


def test_hub_killed_during_a_burst_runs_every_job_exactly_once(system: System) -> None:
    system.start_hub()
    for name in ("east", "west"):
        system.start_agent(name, sim_cluster(name, nodes=10, cpu="100"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "agents registered", system)
    burst = Burst(system.target, burst_items(JOBS))
    wait_for(lambda: burst.count() >= 3000, 120, "3,000 jobs stored", system)
    system.kill("hub", signal.SIGKILL)
    system.start_hub(name="hub-2")
    burst.join(timeout=300)
    assert burst.errors, "no call failed: the hub was not killed during the burst"

    engine = sa.create_engine(system.database_url)
    try:

        def finished() -> bool:
            with engine.connect() as conn:
                n = conn.execute(sa.text("SELECT count(*) FROM resource_bindings WHERE phase = 'Succeeded'"))
                return int(n.scalar_one()) == JOBS

        wait_for(finished, 300, "every job Succeeded", system)
        with engine.connect() as conn:
            jobs = conn.execute(
                sa.text(
                    "SELECT count(*), count(DISTINCT request_id), count(*) FILTER (WHERE phase = 'Completed') FROM jobs"
                )
            ).one()
            runs = conn.execute(
                sa.text(
                    "SELECT min(generation), max(generation), "
                    "  (SELECT count(*) FROM events WHERE reason IN ('Fenced', 'Rejected', 'Requeued')) "
                    "FROM resource_bindings"
                )
            ).one()
    finally:
        engine.dispose()
    # One job per request id, each Completed; each dispatched once (a second dispatch is a new
    # generation) and never stopped or sent back: the agents run a (job, generation) once.
    assert tuple(jobs) == (JOBS, JOBS, JOBS)
    assert tuple(runs) == (1, 1, 0)
