"""The simulator against the hub: seeded scenarios (queues, priorities, elastic gangs, pods that are
never victims, preemption, reclaim, HyperJobs) run through ``vglobal sim run`` and through a hub with
agent processes on the same simulated clusters reach the same outcome: each job on the same cluster
(or waiting), its running pods on the same nodes, the same pods evicted, the same victim events.

Jobs are submitted one at a time (the hub tells jobs submitted together apart by their random
uids): the simulation's outcome after each submission is what the hub must reach before the next,
and its final outcome what the hub must reach and keep. More seeds: ``bench/sim_vs_hub.py``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.e2e.differential import CLASSES, Outcome, Scenario, hub_outcome, scenario, sim_cluster, sim_outcome
from tests.e2e.harness import System, wait_for
from vglobal.model.quantity import to_units
from vglobal.sim.run import run_simulation

pytestmark = pytest.mark.e2e

# The kind is the seed mod 3 (preempt, reclaim, HyperJob). In the suite: a HyperJob preempting whole
# jobs and single pods, a reclaim of single pods, two jobs preempting single pods inside their queue.
# VGLOBAL_DIFF_SEEDS ("a-b" or "a,b,c") runs others.
SPEC = os.environ.get("VGLOBAL_DIFF_SEEDS", "2,4,9")


def _seeds(spec: str) -> list[int]:
    if "-" in spec:
        first, last = (int(x) for x in spec.split("-"))
        return list(range(first, last + 1))
    return [int(x) for x in spec.split(",")]


def _simulate(s: Scenario, tmp: Path, until: float | None) -> Outcome:
    files = []
    for name in s.clusters:
        (f := tmp / f"sim-{name}.yaml").write_text(sim_cluster(name))
        files.append(f)
    (jobs := tmp / "sim-jobs.yaml").write_text(s.jobs_file())
    return sim_outcome(run_simulation(cluster_files=files, jobs_path=jobs, until=until))


def _settled(system: System, expected: Outcome, cpu_held: dict[str, int]) -> bool:
    """The hub shows the expected outcome, and every cluster reported the room its pods take."""
    with system.client() as c:
        if hub_outcome(c, expected.jobs) != expected:
            return False
        for cl in c.list_clusters():
            q = cl.capacity.quantities
            free = cl.free.quantities
            if to_units("cpu", q["cpu"]) - to_units("cpu", free.get("cpu", "0")) != cpu_held.get(cl.name, 0):
                return False
    return True


def _held(s: Scenario, expected: Outcome) -> dict[str, int]:
    """Per cluster, the cpu (millicores) the expected running pods take."""
    cpu: dict[str, int] = {}
    per_pod = _pod_cpu(s)
    for name, (cluster, pods, _, _) in expected.jobs.items():
        if cluster is not None:
            cpu[cluster] = cpu.get(cluster, 0) + sum(
                per_pod[(name, pod.rsplit("-", 2)[-2])] for pod, _ in pods
            )
    return cpu


def _pod_cpu(s: Scenario) -> dict[tuple[str, str], int]:
    """(job, task) -> its pods' cpu in millicores, read back from the manifests."""
    import yaml

    out = {}
    for _, text in [*s.first, *s.second]:
        doc = yaml.safe_load(text)
        if doc["kind"] == "HyperJob":
            rj = doc["spec"]["replicatedJobs"][0]
            names = [f"{doc['metadata']['name']}-{rj['name']}-{i}" for i in range(rj["replicas"])]
            tasks = rj["templateSpec"]["tasks"]
        else:
            names, tasks = [doc["metadata"]["name"]], doc["spec"]["tasks"]
        for name in names:
            for t in tasks:
                req = t["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
                out[(name, t["name"])] = to_units("cpu", req)
    return out


def _diff(hub: Outcome, sim: Outcome) -> str:
    return "\n".join(
        f"  {name}: hub {hub.jobs.get(name)}\n  {' ' * len(name)}  sim {sim.jobs[name]}"
        for name in sim.jobs
        if hub.jobs.get(name) != sim.jobs[name]
    )


def _reach(system: System, s: Scenario, expected: Outcome, what: str) -> None:
    """Wait until the hub shows ``expected``; else fail naming each job where they differ."""
    held = _held(s, expected)
    try:
        wait_for(lambda: _settled(system, expected, held), 45, what)
    except AssertionError:
        with system.client() as c:
            got = hub_outcome(c, expected.jobs)
            free = {cl.name: dict(cl.free.quantities) for cl in c.list_clusters()}
        raise AssertionError(
            f"{s.describe()}\n{what}: hub and simulator differ:\n{_diff(got, expected)}\n"
            f"clusters' free: {free}, the expected pods hold {held}\n{system.logs()}"
        ) from None


@pytest.mark.parametrize("seed", _seeds(SPEC))
def test_the_simulator_decides_as_the_hub_and_its_agents(system: System, seed: int) -> None:
    s = scenario(seed)
    # The simulation's outcome once each submission settled (submission k comes at k seconds).
    expected = [_simulate(s, system.tmp, until=k + 0.5) for k in range(len(s.steps))]
    # and stays so (well before a wait reaches the starvation threshold, 10 minutes)
    assert expected[-1] == _simulate(s, system.tmp, until=len(s.steps) + 30.0)
    system.start_hub()
    for name in s.clusters:
        system.start_agent(name, sim_cluster(name))
    wait_for(lambda: len(system.get_json("clusters")) == len(s.clusters), 60, "clusters registered", system)
    system.apply_text("classes", s.queues + "---\n" + CLASSES)
    for k, ((name, manifest), outcome) in enumerate(zip(s.steps, expected, strict=True)):
        with system.client() as c:
            c.submit_many([(manifest, "")])
        _reach(system, s, outcome, f"submission {k} ({name})")
    # What it settled on stays: no later cycle takes more (several cycles and heartbeats on).
    time.sleep(1.5)
    assert _settled(system, expected[-1], _held(s, expected[-1]))
