"""A HyperJob preempts as a lone job does, through hub and agent processes: lower-priority jobs of
its queue fill two simulated clusters; a high-priority HyperJob of two children arrives, the low
jobs' surplus pods are evicted on both clusters in one decision, both children run, one per cluster,
and nothing runs twice."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from tests.e2e.test_preemption import CLASSES, VICTIM

pytestmark = pytest.mark.e2e

# The elastic low job of the lone preemption test (4 pods of 1 cpu fill a cluster, 2 must run, no
# duration: it runs until stopped), one pinned to each cluster.
FILLER = VICTIM.replace(
    "metadata: {name: victim}", "metadata: {name: filler-%s, annotations: {vglobal.io/clusters: %s}}"
)
HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: train}
spec:
  replicatedJobs:
  - name: part
    replicas: 2
    templateSpec:
      priorityClassName: high
      minAvailable: 2
      tasks:
      - name: w
        replicas: 2
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
CLUSTERS = ("east", "west")
CHILDREN = ("train-part-0", "train-part-1")


def test_a_high_priority_hyperjob_preempts_its_queue_mates_on_two_clusters(system: System) -> None:
    system.start_hub()
    for name in CLUSTERS:
        system.start_agent(name, sim_cluster(name, nodes=1, cpu="4", gpus=0))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 60, "two clusters registered", system)
    system.apply_text("classes", CLASSES)
    for name in CLUSTERS:
        system.apply_text(f"filler-{name}", FILLER % (name, name))
    with system.client() as c:

        def full(name: str) -> bool:
            j = c.get_job(f"filler-{name}")
            return (
                j.binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 4
            )

        wait_for(lambda: all(full(n) for n in CLUSTERS), 90, "both clusters full of low pods", system)
        out = system.apply_text("hyperjob", HYPERJOB).stdout
        assert "2 children" in out
        wait_for(
            lambda: all(c.get_job(n).binding_phase == "Running" for n in CHILDREN),
            120,
            "both children running in the low pods' place",
            system,
        )
        placed = {n: c.get_job(n).cluster for n in CHILDREN}
        assert sorted(placed.values()) == sorted(CLUSTERS)
        for child, cluster in placed.items():
            assert c.get_job(child).generation == 1  # admitted once, never moved
            said = [e.message for e in c.explain_job(child).events if e.reason == "Preempting"]
            assert len(said) == 1, said
            assert said[0].startswith(f"HyperJob default/train: child {child} admitted to {cluster} ")
            assert "evicting 2 pods of" in said[0] and "queue default" in said[0]
        # Each filler lost 2 pods once, restarted in place by its PodEvicted policy (generation 1,
        # same cluster), and runs its gang of 2 beside the child.
        for name in CLUSTERS:
            filler = wait_for(
                lambda name=name: (  # type: ignore[misc]
                    (j := c.get_job(f"filler-{name}")).binding_phase == "Running"
                    and sum(1 for p in j.placements if p.node and p.phase == "Running") == 2
                    and j
                ),
                90,
                f"filler-{name} running its gang again",
                system,
            )
            assert filler.generation == 1 and filler.cluster == name and filler.retry_count == 1
            reasons = [(e.source, e.reason) for e in c.explain_job(f"filler-{name}").events]
            assert [r for s, r in reasons if r == "Preempted" and not s.startswith("agent/")] == ["Preempted"]
        hj = wait_for(
            lambda: (h := c.get_hyperjob("train")).phase == "Running" and h, 60, "HyperJob running", system
        )
        assert hj.running_children == 2
    # Nothing ran twice: one dispatch per job, each on its own cluster.
    jobs = {j["name"]: j for j in system.get_json("jobs")}
    assert {n: jobs[n]["cluster"] for n in (*CHILDREN, "filler-east", "filler-west")} == {
        **placed,
        "filler-east": "east",
        "filler-west": "west",
    }
    with system.client() as c:
        for name in (*CHILDREN, "filler-east", "filler-west"):
            assert [(d.generation, d.fenced) for d in c.job_dispatches(name)] == [(1, False)]
