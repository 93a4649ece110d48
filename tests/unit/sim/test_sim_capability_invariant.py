"""Invariant (d) through `vglobal sim run` (the hub's decisions, the agents' own scheduler): a
queue's capability holds every placed pod, elastic pods beyond minAvailable included.

Seeded scenarios: two clusters, two queues with a cpu capability, elastic jobs (minAvailable from 0
to replicas) of two priority classes, run for a minute of virtual time.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from vglobal.sim.run import run_simulation

SEEDS = range(16)

CLUSTER = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - {{name: n, count: {count}, allocatable: {{cpu: "{cpu}", memory: 64Gi}}}}
"""
CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 1
"""
JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: j{k}}}
spec:
  queue: {queue}
  minAvailable: {min}
  priorityClassName: {cls}
  tasks:
  - name: w
    replicas: {replicas}
    template:
      spec: {{containers: [{{name: w, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}
"""


def _scenario(seed: int, root: Path) -> tuple[list[Path], Path, dict[str, int]]:
    rng = random.Random(seed)
    clusters = []
    for i in range(2):
        path = root / f"c{i}.yaml"
        path.write_text(CLUSTER.format(name=f"c{i}", count=rng.randint(1, 3), cpu=rng.choice([4, 8])))
        clusters.append(path)
    docs, caps = [CLASSES], {}
    for q in ("qa", "qb"):
        caps[q] = rng.randint(3, 10)
        docs.append(
            f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {q}}}\n"
            f'spec: {{capability: {{cpu: "{caps[q]}"}}}}\n'
        )
    for k in range(rng.randint(3, 6)):
        queue, replicas = rng.choice(["qa", "qb"]), rng.randint(1, 8)
        low = rng.randint(0, replicas)
        docs.append(JOB.format(k=k, queue=queue, min=low, cls=rng.choice(["low", "high"]), replicas=replicas))
    jobs = root / "jobs.yaml"
    jobs.write_text("---\n".join(docs))
    return clusters, jobs, caps


@pytest.mark.parametrize("seed", SEEDS)
def test_capability_holds_every_placed_pod(seed: int, tmp_path: Path) -> None:
    """Seed 14: two clusters placed pods beyond their gangs for one queue at once, each counting
    what the queue held on the other (8 cpu in a 7-cpu queue) before the hub split the room."""
    clusters, jobs, caps = _scenario(seed, tmp_path)
    result = run_simulation(cluster_files=clusters, jobs_path=jobs, until=60.0)
    held: dict[str, int] = {}
    for job in result["jobs"]:
        held[job["queue"]] = held.get(job["queue"], 0) + sum(1 for p in job["pods"] if p["node"])
    over = {q: (n, caps[q]) for q, n in held.items() if n > caps[q]}
    assert not over, f"seed {seed}: placed cpu over capability: {over}"


def _placed(result: dict[str, object]) -> dict[str, int]:
    return {j["name"]: sum(1 for p in j["pods"] if p["node"]) for j in result["jobs"]}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("gang", "placed"), [(0, 0), (1, 2)])
def test_in_queue_victim_is_not_placed_again_into_its_room(gang: int, placed: int, tmp_path: Path) -> None:
    """A job of 4 one-cpu pods fills its 4-cpu queue; a higher-priority gang of 2 of the same queue
    comes: the victim is not placed again into the room it left (else 6 cpu run in a 4-cpu queue).
    With minAvailable 0 its gang is the whole job: taken whole, it waits while the preemptor runs;
    with minAvailable 1, two of its pods go and the other two run on."""
    c = tmp_path / "c0.yaml"
    c.write_text(CLUSTER.format(name="c0", count=1, cpu=8))
    late = "metadata: {name: j1, annotations: {vglobal.io/sim-submit-at: 5s}}"
    docs = [
        CLASSES,
        'apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {capability: {cpu: "4"}}\n',
        JOB.format(k=0, queue="q", min=gang, cls="low", replicas=4),
        JOB.format(k=1, queue="q", min=2, cls="high", replicas=2).replace("metadata: {name: j1}", late),
    ]
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("---\n".join(docs))
    result = run_simulation(cluster_files=[c], jobs_path=jobs, until=60.0)
    assert _placed(result) == {"j0": placed, "j1": 2}
