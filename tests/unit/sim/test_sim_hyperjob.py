"""`vglobal sim run` replays a HyperJob: its children start together, one per cluster."""

from __future__ import annotations

import json
from pathlib import Path

from vglobal.sim.run import run_simulation

CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: %(name)s}
spec:
  nodeGroups:
  - name: %(name)s
    count: 4
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
"""

HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: llm}
spec:
  replicatedJobs:
  - name: trainer
    replicas: 3
    templateSpec:
      tasks:
      - name: worker
        replicas: 4
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 10m}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]
"""


def test_a_hyperjob_replays_as_three_children_at_once_one_per_cluster(tmp_path: Path) -> None:
    files = []
    for name in ("c1", "c2", "c3"):
        f = tmp_path / f"{name}.yaml"
        f.write_text(CLUSTER % {"name": name})
        files.append(f)
    jobs = tmp_path / "hj.yaml"
    jobs.write_text(HYPERJOB)
    result = run_simulation(cluster_files=files, jobs_path=jobs)
    got = {j["name"]: (j["cluster"], j["admittedAt"], j["phase"]) for j in result["jobs"]}
    assert sorted(got) == ["llm-trainer-0", "llm-trainer-1", "llm-trainer-2"]
    assert sorted(c for c, _, _ in got.values()) == ["c1", "c2", "c3"]
    assert {(at, phase) for _, at, phase in got.values()} == {(0.0, "Completed")}


def _racked(name: str, per_tor: int) -> str:
    """Four 8-GPU nodes under one spine, ``per_tor`` to a ToR (HyperNodes discovered from labels)."""
    groups = [
        {
            "name": f"{name}-t{t}",
            "count": per_tor,
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "labels": {"example.com/spine": "s0", "example.com/tor": f"t{t}"},
        }
        for t in range(4 // per_tor)
    ]
    levels = [{"nodeLabel": k} for k in ("example.com/spine", "example.com/tor", "kubernetes.io/hostname")]
    doc = {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": name},
        "spec": {"nodeGroups": groups, "hyperNodeDiscovery": {"networkTopologyTypes": {"dc": levels}}},
    }
    return json.dumps(doc)


AUTO = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: auto}
spec:
  replicatedJobs:
  - name: part
    splitPolicy: {mode: auto, accelerators: %d}
    templateSpec:
      tasks:
      - name: worker
        replicas: 1
        template:
          metadata: {annotations: {vglobal.io/sim-duration: 1h}}
          spec:
            containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]
"""


def test_an_auto_split_goes_where_one_tor_holds_the_share(tmp_path: Path) -> None:
    # a and b have 32 GPUs each and either holds all 16: a's ToRs have one node each, b's two, so
    # the share's 2 pods fit one of b's ToRs (tier 1) but only a's spine (tier 2).
    files = []
    for name, per_tor in (("a", 1), ("b", 2)):
        (f := tmp_path / f"{name}.yaml").write_text(_racked(name, per_tor))
        files.append(f)
    (jobs := tmp_path / "auto.yaml").write_text(AUTO % 16)
    result = run_simulation(cluster_files=files, jobs_path=jobs)
    assert [(j["name"], j["cluster"], len(j["pods"])) for j in result["jobs"]] == [("auto-part-0", "b", 2)]


LOW = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: low-%(c)s, annotations: {vglobal.io/clusters: %(c)s, vglobal.io/sim-duration: 2h}}
spec:
  tasks:
  - name: w
    replicas: 4
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]
"""
URGENT = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: urgent}
value: 1000
"""


def test_a_high_priority_hyperjob_preempts_the_jobs_that_fill_its_clusters(tmp_path: Path) -> None:
    files = []
    for name in ("c1", "c2"):
        f = tmp_path / f"{name}.yaml"
        f.write_text(CLUSTER % {"name": name})
        files.append(f)
    hj = (
        HYPERJOB.replace("replicas: 3", "replicas: 2")
        .replace(
            "metadata: {name: llm}", "metadata: {name: llm, annotations: {vglobal.io/sim-submit-at: 10m}}"
        )
        .replace("      tasks:", "      priorityClassName: urgent\n      tasks:", 1)
    )
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("---".join([URGENT, LOW % {"c": "c1"}, LOW % {"c": "c2"}, hj]))
    result = run_simulation(cluster_files=files, jobs_path=jobs, until=1800.0)
    by_name = {j["name"]: j for j in result["jobs"]}
    kids = ("llm-trainer-0", "llm-trainer-1")
    assert sorted(by_name[k]["cluster"] for k in kids) == ["c1", "c2"]
    assert {by_name[k]["admittedAt"] for k in kids} == {600.0}
    for low in ("low-c1", "low-c2"):  # each stopped once, for the child on its cluster
        assert [e["reason"] for e in by_name[low]["events"]].count("Preempted") == 1, by_name[low]["events"]
