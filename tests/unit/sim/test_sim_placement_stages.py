"""The placement stages end to end through ``run_simulation`` (hub admission + agent code, virtual
clock) with the scenario's placement file: GPU work fills the on-premises clusters before the
tainted cloud, CPU-only work takes the CPU cluster while it has room, data locality places a job
where its dataset lives (required: it waits there; preferred: it spills), a gang bigger than the
cloud's nodes is admitted there and runs once its pool grows, and a run away from where it prefers
is preempted before its newer equals at home."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vglobal.model.admission_policy import AdmissionPolicy
from vglobal.model.placement_config import load_placement_config
from vglobal.sim.dispatch import Rules
from vglobal.sim.run import run_simulation

FIXTURES = Path(__file__).parents[2] / "fixtures" / "placement"


def _events(job: dict[str, Any], reason: str) -> list[tuple[float, str]]:
    return [(e["time"], e["message"]) for e in job["events"] if e["reason"] == reason]


def test_the_placement_scenario() -> None:
    rules = Rules(AdmissionPolicy(placement_config=load_placement_config(FIXTURES / "placement.yaml")))
    result = run_simulation(
        cluster_files=[FIXTURES / "clusters.yaml"], jobs_path=FIXTURES / "jobs.yaml", rules=rules
    )
    jobs = {j["name"]: j for j in result["jobs"]}
    assert all(j["phase"] == "Completed" for j in jobs.values())
    first = {n: _events(j, "Dispatched")[0] for n, j in jobs.items()}
    where = {n: msg.split()[3] for n, (_, msg) in first.items()}  # "admitted to cluster X (...)"
    # on-premises first, the tainted cloud when both are full (an away run, said so)
    assert (where["train-1"], where["train-2"]) == ("on-prem-a", "cloud")
    assert _events(jobs["train-2"], "Away") == [
        (0.0, "runs away from where it prefers: cluster cloud is tainted burst=true:PreferNoSchedule")
    ]
    assert not _events(jobs["train-1"], "Away")
    # CPU-only work on the CPU cluster while it has room, then a GPU cluster (not the cloud)
    assert [where[f"cpu-{i}"] for i in (1, 2, 3)] == ["cpu-central", "cpu-central", "on-prem-a"]
    # why each landed where it did: the chosen cluster's verdict at admission
    assert _events(jobs["cpu-3"], "Placed") == [
        (
            0.0,
            "placement verdict at admission: on-prem-a: score 0.50, tried 2nd "
            "(taint vglobal.io/accelerators:PreferNoSchedule (tried last))",
        )
    ]
    # data locality: on-prem-b holds imagenet (binpack alone picks on-prem-a); required waits for
    # it, preferred spills to the cloud
    assert where["data-near"] == "on-prem-b"
    assert first["data-strict"] == (600.0, "admitted to cluster on-prem-b (generation 1)")
    assert first["data-soft"][0] == 30.0 and where["data-soft"] == "cloud"
    # urgent needs room on the cloud: the away run goes, not the newer cloud-native (at home there)
    assert [t for t, _ in _events(jobs["data-soft"], "Preempted")] == [120.0]
    assert not _events(jobs["cloud-native"], "Preempted")
    assert not _events(jobs["train-2"], "Preempted")  # the newer away run goes first
    assert where["urgent"] == "cloud"
    # a gang bigger than the cloud's 3 nodes: admitted there at once, the pool grows, the gang runs
    assert first["pretrain"][0] == 90.0 and where["pretrain"] == "cloud"
    assert _events(jobs["pretrain"], "Provisioning") == [
        (90.0, "its gang needs 4 nodes of node pool gpu that cluster cloud can add")
    ]
    assert [t for t, _ in _events(jobs["pretrain"], "JobRunning")] == [210.0]  # provisionDelay 2m
    assert sorted(p["node"] for p in jobs["pretrain"]["pods"]) == ["gpu-3", "gpu-4", "gpu-5", "gpu-6"]
    assert not _events(jobs["pretrain"], "Preempted")  # at home on the cloud (it tolerates burst)


def test_a_queues_placement_applies_to_its_jobs_in_sim(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters.yaml"
    clusters.write_text(
        "---\n".join(
            f"apiVersion: vglobal.io/v1alpha1\nkind: SimCluster\nmetadata: {{name: {n}}}\n"
            f"spec: {{nodeGroups: [{{name: n, count: 1, allocatable: {{cpu: '8', memory: 8Gi}}}}]}}\n"
            for n in ("a", "b")
        )
    )
    job = (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {0}}}\nspec:\n  queue: wide\n"
        "  tasks: [{{name: w, replicas: 1, template: {{spec: {{containers: [{{name: w, image: x, "
        "resources: {{requests: {{cpu: '2'}}}}}}]}}}}}}]\n"
    )
    queues = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: spreading, annotations: "
        "{vglobal.io/placement: spread}}\nspec: {weight: 1}\n---\n"
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: wide}\n"
        "spec: {parent: spreading}\n"
    )
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(queues + "---\n" + job.format("one") + "---\n" + job.format("two"))
    result = run_simulation(cluster_files=[clusters], jobs_path=jobs)
    assert sorted(j["cluster"] for j in result["jobs"]) == ["a", "b"]  # binpack would put both on a
