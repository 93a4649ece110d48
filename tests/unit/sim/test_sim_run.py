"""``run_simulation``: jobs through admission and the agents' code on simulated clusters, virtual time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vglobal.clock import VirtualClock
from vglobal.sim.run import run_simulation

CPU = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: cpu, labels: {gpu: none}}
spec:
  nodeGroups:
  - {name: c, count: 2, allocatable: {cpu: "8", memory: 32Gi}}
"""
GPU = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: gpu, labels: {gpu: a100}}
spec:
  nodeGroups:
  - {name: g, count: 2, allocatable: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "8"}}
"""
TWO_TASKS = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, annotations: {vglobal.io/sim-duration: 30s}}
spec:
  tasks:
  - name: ps
    replicas: 1
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 40s}}
      spec: {containers: [{name: ps, image: x, resources: {requests: {cpu: "2"}}}]}
  - name: worker
    replicas: 2
    template:
      spec: {containers: [{name: w, image: x, resources: {requests: {cpu: "2", nvidia.com/gpu: "8"}}}]}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
"""
CPU_JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: prep, namespace: data}
spec:
  tasks:
  - name: w
    replicas: 3
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 10s, vglobal.io/sim-exit-code: "1"}}
      spec: {containers: [{name: w, image: x, resources: {requests: {cpu: "4"}}}]}
"""
TOO_BIG = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: huge}
spec:
  tasks:
  - name: w
    replicas: 3
    template:
      spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]}
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"cpu": CPU, "gpu": GPU, "train": TWO_TASKS, "prep": CPU_JOB, "huge": TOO_BIG}.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(text)
    return out


def test_two_task_job_completes_on_the_cluster_that_fits(files: dict[str, Path]) -> None:
    result = run_simulation(cluster_files=[files["cpu"], files["gpu"]], jobs_path=files["train"])
    (job,) = result["jobs"]
    assert (job["name"], job["namespace"], job["phase"], job["cluster"]) == (
        "train",
        "default",
        "Completed",
        "gpu",
    )
    pods = {p["name"]: p for p in job["pods"]}
    assert set(pods) == {"train-ps-0", "train-worker-0", "train-worker-1"}
    assert all(p["phase"] == "Succeeded" and p["node"] in ("g-0", "g-1") for p in pods.values())
    assert pods["train-worker-0"]["node"] != pods["train-worker-1"]["node"]  # 8 GPUs each: one per node
    assert result["time"] == 40.0  # the ps pod's own 40s beats the job's 30s
    json.dumps(result)  # the CLI prints it as JSON


def test_equally_empty_clusters_tie_by_name_and_failures_show(files: dict[str, Path]) -> None:
    result = run_simulation(cluster_files=[files["cpu"], files["gpu"]], jobs_path=files["prep"])
    (job,) = result["jobs"]
    assert job["cluster"] == "cpu"  # both hold it and are as full: binpack's tie goes by name
    assert job["phase"] == "Failed"  # every pod exits 1 and there is no policy
    assert {p["phase"] for p in job["pods"]} == {"Failed"}


def test_a_gang_no_cluster_holds_stays_pending_on_none(files: dict[str, Path]) -> None:
    result = run_simulation(cluster_files=[files["cpu"], files["gpu"]], jobs_path=files["huge"])
    (job,) = result["jobs"]
    assert (job["phase"], job["cluster"], job["pods"], job["admittedAt"]) == ("Pending", None, [], None)
    assert job["reason"] == "job needs nvidia.com/gpu 24 but all schedulable clusters together have 16"


def test_directory_of_jobs_and_until(files: dict[str, Path], tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "a.yaml").write_text(TWO_TASKS)
    (jobs / "b.yml").write_text(CPU_JOB)
    result = run_simulation(cluster_files=[files["cpu"], files["gpu"]], jobs_path=jobs, until=20.0)
    phases = {j["name"]: j["phase"] for j in result["jobs"]}
    assert phases == {"train": "Running", "prep": "Failed"}
    assert result["time"] == 20.0


def test_virtual_clock_never_goes_back() -> None:
    clock = VirtualClock(5.0)
    clock.advance(1.5)
    assert clock.now() == 6.5
    with pytest.raises(ValueError):
        clock.advance_to(1.0)


def test_scheduler_conf_file_is_used(files: dict[str, Path], tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
    )
    result = run_simulation(cluster_files=[files["gpu"]], jobs_path=files["train"], scheduler_conf=conf)
    assert result["jobs"][0]["phase"] == "Completed"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: no-such-plugin\n')
    with pytest.raises(ValueError, match=r"tiers\[0\]\.plugins\[0\]\.name"):
        run_simulation(cluster_files=[files["gpu"]], jobs_path=files["train"], scheduler_conf=conf)
