"""Volcano Job manifests: Volcano's webhook defaults, pod requests, gangs, placement, the docs' examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.model.job_docs import FIXTURES, base_doc, container, parse, pod, rv, spec, task
from vglobal.agent.backends.sim_cluster import parse_sim_manifests
from vglobal.model.job import Job, parse_job
from vglobal.model.manifests import parse_manifests
from vglobal.model.resources import ResourceVector

# ---------------------------------------------------------------- defaults and derived values


def test_volcano_webhook_defaults() -> None:
    job = parse()
    assert job.queue == "default"
    assert job.max_retry == 3
    assert job.scheduler_name == "volcano"
    assert [t.min_available for t in job.tasks] == [2, 6]  # task.minAvailable = replicas
    assert job.min_available == 8  # Σ task.minAvailable
    assert job.namespace == "team-a"
    assert job.key == "team-a/train"


def test_explicit_zero_min_available_and_max_retry_are_defaulted_like_volcano() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc).update(minAvailable=0, maxRetry=0)
        task(doc, 1)["minAvailable"] = 3

    job = parse(m)
    assert job.min_available == 2 + 3
    assert job.max_retry == 3


def test_missing_namespace_is_default_and_unnamed_task_is_named_by_index() -> None:
    def m(doc: dict[str, Any]) -> None:
        del doc["metadata"]["namespace"]
        del task(doc, 1)["name"]

    job = parse(m)
    assert job.namespace == "default"
    assert [t.name for t in job.tasks] == ["ps", "default1"]


def test_raw_is_the_manifest_as_submitted_and_independent_of_the_input() -> None:
    doc = base_doc()
    doc["spec"]["someFieldWeDoNotModel"] = {"x": 1}
    job = parse_job(doc)
    assert job.raw == doc
    assert "minAvailable" not in job.raw["spec"]  # no defaults written into it
    doc["spec"]["tasks"][0]["replicas"] = 99
    assert job.raw["spec"]["tasks"][0]["replicas"] == 2
    assert job.tasks[0].template == base_doc()["spec"]["tasks"][0]["template"]


def test_pod_request_uses_limits_where_requests_are_absent() -> None:
    job = parse()
    assert job.tasks[0].pod_request == rv({"cpu": "1", "memory": "2Gi"})
    assert job.tasks[1].pod_request == rv({"cpu": "2", "nvidia.com/gpu": "1"})


def test_pod_request_sums_containers_and_keeps_an_explicit_zero_request() -> None:
    def m(doc: dict[str, Any]) -> None:
        pod(doc, 0)["containers"] = [
            container({"cpu": "1"}),
            container({"cpu": "500m", "memory": "0"}, {"memory": "1Gi"}),
        ]

    assert parse(m).tasks[0].pod_request == rv({"cpu": "1500m"})


def test_init_containers_count_as_the_larger_of_init_peak_and_containers() -> None:
    def m(doc: dict[str, Any]) -> None:
        pod(doc, 0)["containers"] = [container({"cpu": "1", "memory": "1Gi"})]
        pod(doc, 0)["initContainers"] = [container({"cpu": "3"}), container({"memory": "512Mi"})]

    assert parse(m).tasks[0].pod_request == rv({"cpu": "3", "memory": "1Gi"})


def test_sidecars_and_overhead_add_to_the_pod_request() -> None:
    def m(doc: dict[str, Any]) -> None:
        sidecar = container({"cpu": "250m"}) | {"restartPolicy": "Always"}
        pod(doc, 0)["containers"] = [container({"cpu": "1"})]
        pod(doc, 0)["initContainers"] = [sidecar, container({"cpu": "2"})]
        pod(doc, 0)["overhead"] = {"cpu": "100m"}

    # max(1 + 0.25 sidecar, 2 init + 0.25 sidecar) + 0.1 overhead
    assert parse(m).tasks[0].pod_request == rv({"cpu": "2350m"})


def test_total_request_counts_every_task() -> None:
    job = parse()
    assert job.total_pods() == 8
    assert job.total_request() == rv({"cpu": "14", "memory": "4Gi", "nvidia.com/gpu": "6"})


def test_gang_is_each_tasks_min_available() -> None:
    def m(doc: dict[str, Any]) -> None:
        task(doc, 0)["minAvailable"] = 1
        task(doc, 1)["minAvailable"] = 4

    job = parse(m)
    assert job.min_available == 5
    assert [(name, n) for name, _, n in job.gang()] == [("ps", 1), ("worker", 4)]
    assert job.gang_request() == rv({"cpu": "9", "memory": "2Gi", "nvidia.com/gpu": "4"})


def test_gang_smaller_than_task_minimums_is_taken_in_task_order() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc)["minAvailable"] = 3

    job = parse(m)
    assert [(name, n) for name, _, n in job.gang()] == [("ps", 2), ("worker", 1)]
    assert job.gang_request() == rv({"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": "1"})


def test_gang_larger_than_task_minimums_adds_replicas_in_task_order() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc)["minAvailable"] = 6
        task(doc, 0)["minAvailable"] = 0
        task(doc, 1)["minAvailable"] = 2

    job = parse(m)
    assert [(name, n) for name, _, n in job.gang()] == [("ps", 2), ("worker", 4)]


def test_placement_annotations() -> None:
    def m(doc: dict[str, Any]) -> None:
        doc["metadata"]["annotations"] = {
            "vglobal.io/clusters": "gpu-east, gpu-west",
            "vglobal.io/cluster-selector": "region=eu,gpu=h100",
        }

    job = parse(m)
    assert job.allowed_clusters == frozenset({"gpu-east", "gpu-west"})
    assert job.cluster_selector == {"region": "eu", "gpu": "h100"}
    plain = parse()
    assert plain.allowed_clusters is None
    assert plain.cluster_selector == {}


def test_policies_network_topology_plugins_and_priority() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc).update(
            priorityClassName="high",
            minSuccess=6,
            policies=[{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob", "timeout": "5m"}],
            networkTopology={"mode": "soft", "highestTierName": "spine"},
            plugins={"mpi": ["--port=2222"]},
        )
        task(doc, 1)["policies"] = [{"exitCode": 3, "action": "RestartTask"}]
        pod(doc, 1)["priorityClassName"] = "low"

    job = parse(m)
    assert job.priority_class_name == "high"
    assert job.min_success == 6
    assert job.policies[0].events == ("PodEvicted", "PodFailed")
    assert job.policies[0].timeout_seconds == 300
    assert job.tasks[1].policies[0].exit_code == 3
    assert job.tasks[1].priority_class_name == "low"
    assert job.network_topology is not None
    assert (job.network_topology.mode, job.network_topology.highest_tier_name) == ("soft", "spine")
    # Volcano adds the svc and ssh plugins mpi depends on.
    assert job.plugins == {"mpi": ("--port=2222",), "svc": (), "ssh": ()}


# ---------------------------------------------------------------- the Volcano docs examples


def test_volcano_ray_job() -> None:
    [job] = parse_manifests((FIXTURES / "volcano-ray-cluster.yaml").read_text())
    assert isinstance(job, Job)
    assert job.min_available == 3
    assert [(name, n) for name, _, n in job.gang()] == [("head", 1), ("worker", 2)]
    assert job.total_request() == ResourceVector()  # the example requests nothing
    assert job.plugins == {"ray": (), "svc": ()}
    assert job.policies[0].events == ("PodEvicted",) and job.policies[0].action == "RestartJob"


def test_volcano_network_topology_job() -> None:
    [job] = parse_manifests((FIXTURES / "volcano-network-topology.yaml").read_text())
    assert isinstance(job, Job)
    assert job.network_topology is not None
    assert (job.network_topology.mode, job.network_topology.highest_tier_allowed) == ("hard", 2)
    assert job.gang() == (("pod", rv({"cpu": "1"}), 3),)
    assert job.gang_request() == rv({"cpu": "3"})


def test_volcano_tensorflow_ps_worker_job() -> None:
    [job] = parse_manifests((FIXTURES / "volcano-tf-ps-worker.yaml").read_text())
    assert isinstance(job, Job)
    assert job.min_available == 3
    assert job.tasks[1].policies[0].action == "CompleteJob"
    # the worker's GPU comes from its limit, as Kubernetes defaults a missing request
    assert job.total_request() == rv({"cpu": "4500m", "memory": "9Gi", "nvidia.com/gpu": "2"})
    assert job.gang_request() == job.total_request()


def test_repository_examples_and_clusters_parse() -> None:
    root = Path(__file__).resolve().parents[3]
    examples, clusters = sorted((root / "examples").glob("*.yaml")), sorted((root / "clusters").glob("*.yaml"))
    assert examples and clusters
    for f in examples:
        assert parse_manifests(f.read_text()), f
    for f in clusters:  # the simulator's input: the hub's kinds and SimCluster
        assert parse_sim_manifests(f.read_text()), f
