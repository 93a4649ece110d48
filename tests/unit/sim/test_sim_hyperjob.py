"""`vglobal sim run` replays a HyperJob: its children start together, one per cluster."""

from __future__ import annotations

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
