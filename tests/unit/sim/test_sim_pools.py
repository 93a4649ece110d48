"""Clusters that grow, through ``run_simulation`` (hub admission + agent code, virtual clock): a
gang bigger than the cluster's nodes is admitted onto its pool's room, the pool grows after its
provisioning delay and the gang runs; a gang that fits today's nodes grows nothing; a pool at its
maximum admits nothing bigger; nodes that come too late hand the gang back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.model.errors import ManifestError
from vglobal.sim.run import run_simulation

FIXTURES = Path(__file__).parents[2] / "fixtures" / "growable"
CLOUD = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: cloud}}
spec:
  nodeGroups:
  - name: gpu
    count: 2
    allocatable: {{cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}}
    autoscale: {{max: {max}, provisionDelay: 2m}}
"""
JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  tasks:
  - name: w
    replicas: {pods}
    template:
      metadata: {{annotations: {{vglobal.io/sim-duration: 10m}}}}
      spec: {{containers: [{{name: w, image: x, resources: {{requests: {{nvidia.com/gpu: "8"}}}}}}]}}
"""


def run(tmp_path: Path, *, max_: int, pods: int, **kw: Any) -> dict[str, Any]:
    cluster = tmp_path / "cloud.yaml"
    cluster.write_text(CLOUD.format(max=max_))
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOB.format(name="train", pods=pods))
    result = run_simulation(cluster_files=[cluster], jobs_path=jobs, **kw)
    (job,) = result["jobs"]
    return dict(job)


def events(job: dict[str, Any], *reasons: str) -> list[tuple[float, str, str]]:
    return [(e["time"], e["reason"], e["message"]) for e in job["events"] if e["reason"] in reasons]


def test_the_scenario_gang_runs_on_nodes_the_pool_adds_after_its_delay() -> None:
    result = run_simulation(
        cluster_files=[FIXTURES / "cloud.yaml"], jobs_path=FIXTURES / "jobs.yaml", bind_timeout=300.0
    )
    (job,) = result["jobs"]
    assert (job["phase"], job["cluster"]) == ("Completed", "cloud")
    assert sorted(p["node"] for p in job["pods"]) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert [m for _, _, m in events(job, "Provisioning")] == [
        "its gang needs 2 nodes of node pool gpu that cluster cloud can add"
    ]
    (grew,) = events(job, "TriggeredScaleUp")
    assert grew[:2] == (0.0, "TriggeredScaleUp") and "node pool gpu grows by 2 nodes" in grew[2]
    (scheduled,) = events(job, "Scheduled")
    assert scheduled[0] == 120.0  # the pool's provisionDelay on the virtual clock
    assert result["time"] == 120.0 + 600.0
    # its queue is charged from admission on, while the nodes come up (Kueue's provisioning check)
    (queue,) = result["queues"]
    assert queue["samples"] == [[0.0, {"cpu": 32, "nvidia.com/gpu": 32, "pods": 4}], [720.0, {}]]


def test_a_gang_that_fits_todays_nodes_grows_no_pool(tmp_path: Path) -> None:
    job = run(tmp_path, max_=6, pods=2)
    assert (job["phase"], job["cluster"]) == ("Completed", "cloud")
    assert sorted(p["node"] for p in job["pods"]) == ["gpu-0", "gpu-1"]
    assert events(job, "TriggeredScaleUp") == []
    assert events(job, "Scheduled")[0][0] == 0.0


def test_a_pool_grows_for_the_gang_not_for_its_elastic_pods(tmp_path: Path) -> None:
    # 4 replicas, minAvailable 3: one node more holds the gang; the 4th pod waits for room
    elastic = JOB.format(name="train", pods=4).replace("spec:\n  tasks:", "spec:\n  minAvailable: 3\n  tasks:")
    (tmp_path / "cloud.yaml").write_text(CLOUD.format(max=6))
    (tmp_path / "jobs.yaml").write_text(elastic)
    result = run_simulation(cluster_files=[tmp_path / "cloud.yaml"], jobs_path=tmp_path / "jobs.yaml", until=200.0)
    (job,) = result["jobs"]
    assert [m for _, _, m in events(job, "TriggeredScaleUp")] == [
        "node pool gpu grows by 1 node for its gang (up in about 120s)"
    ]
    assert job["phase"] == "Running"
    assert sorted(str(p["node"]) for p in job["pods"]) == ["None", "gpu-0", "gpu-1", "gpu-2"]


def test_a_pool_at_its_maximum_does_not_admit_a_bigger_gang(tmp_path: Path) -> None:
    job = run(tmp_path, max_=3, pods=4, until=600.0)
    assert (job["phase"], job["cluster"]) == ("Pending", None)
    # the pool's room counts as the cluster's capacity: 3 nodes at most, not the 2 it has
    assert job["reason"] == "job needs nvidia.com/gpu 32 but all schedulable clusters together have 24"
    assert events(job, "Dispatched", "TriggeredScaleUp") == []


def test_nodes_that_come_after_the_bind_timeout_hand_the_gang_back(tmp_path: Path) -> None:
    job = run(tmp_path, max_=6, pods=3, bind_timeout=60.0, until=100.0)
    assert [r for _, r, _ in events(job, "Dispatched", "TriggeredScaleUp", "Rejected")] == [
        "Dispatched",
        "TriggeredScaleUp",
        "Rejected",
    ]
    assert job["cluster"] is None


@pytest.mark.parametrize(
    ("autoscale", "field"),
    [
        ("{max: 1, provisionDelay: 2m}", "spec.nodeGroups[0].autoscale.max"),
        ("{max: 4, provisionDelay: soon}", "spec.nodeGroups[0].autoscale.provisionDelay"),
    ],
)
def test_a_bad_autoscale_names_its_field(autoscale: str, field: str) -> None:
    doc = {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": "c"},
        "spec": {"nodeGroups": [{"name": "g", "count": 2, "allocatable": {"cpu": "1"}}]},
    }
    import yaml

    doc["spec"]["nodeGroups"][0]["autoscale"] = yaml.safe_load(autoscale)  # type: ignore[index]
    with pytest.raises(ManifestError) as err:
        parse_sim_cluster(doc)
    assert field in str(err.value)
