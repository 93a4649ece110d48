"""Many agents in one process against a real hub (the short form of bench/agents_load.py): five
clusters of 50 nodes, each with its own stream, heartbeats and reports; every job submitted is
completed once, the hub records it so, and every cluster got work."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from agents_fleet import Fleet
from e2e_load import MANIFEST

from tests.e2e.harness import System, wait_for
from vglobal.client import Client
from vglobal.dial import Dial


def test_five_agents_in_one_process_each_run_work_and_nothing_is_lost_or_run_twice(system: System) -> None:
    system.start_hub("--placement", "spread")
    fleet = Fleet([f"c{i}" for i in range(5)], 50, lambda _: Dial(system.target), run_seconds=0.2)
    fleet.start()
    try:
        wait_for(lambda: fleet.registered() == 5, 60, "five agents registered", system)
        names = [f"j{i}" for i in range(50)]
        with Client(system.target) as c:
            c.submit_jobs([(MANIFEST % (n, "1s", ""), n) for n in names])
            wait_for(lambda: len(fleet.completed) == 50, 60, "50 runs completed by the agents", system)
            done = wait_for(
                lambda: len(got := [j for j in c.list_jobs() if j.phase == "Completed"]) == 50 and got,
                30,
                "50 jobs Completed at the hub",
                system,
            )
    finally:
        fleet.stop()
    assert sorted(j.name for j in done) == sorted(names)
    assert all(len(runs) == 1 for runs in fleet.runs.values()), "a job ran twice"
    ran_on = {cluster for runs in fleet.runs.values() for _, cluster, _ in runs}
    assert ran_on == {f"c{i}" for i in range(5)}
