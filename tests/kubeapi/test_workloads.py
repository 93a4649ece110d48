"""The workload kinds' controllers: pods named, labelled and owned as the real controllers make them,
left to their template's scheduler, and status that follows the pods' phases; the CRDs in discovery."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiEmulator
from tests.kubeapi.testkit import binding, wait_until

NS = "default"


def template(duration: str | None = None, exit_code: int = 0, cpu: str = "100m") -> dict[str, Any]:
    notes = {"vglobal.io/sim-exit-code": str(exit_code)}
    if duration:
        notes["vglobal.io/sim-duration"] = duration
    return {
        "metadata": {"labels": {"app": "x"}, "annotations": notes},
        "spec": {
            "schedulerName": "vglobal",
            "containers": [
                {"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu}}}
            ],
        },
    }


def never(tmpl: dict[str, Any]) -> dict[str, Any]:
    return {**tmpl, "spec": {**tmpl["spec"], "restartPolicy": "Never"}}


@pytest.fixture
def api(kube_api: KubeApiEmulator) -> Any:
    return kube_api.api_client()


def pods(api: Any, selector: str = "") -> list[Any]:
    items = client.CoreV1Api(api).list_namespaced_pod(NS, label_selector=selector).items
    return sorted((p for p in items if p.metadata.deletion_timestamp is None), key=lambda p: p.metadata.name)


def bind_all(api: Any, selector: str = "") -> int:
    core, n = client.CoreV1Api(api), 0
    for i, p in enumerate(pods(api, selector)):
        if not p.spec.node_name:
            core.create_namespaced_pod_binding(
                p.metadata.name, NS, binding(p.metadata.name, f"node-{i % 4}"), _preload_content=False
            )
            n += 1
    return n


def custom(api: Any, group: str, plural: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        group, "v1", NS, plural, name
    )
    return out


def test_the_workload_crds_are_in_discovery_while_installed(kube_api: KubeApiEmulator, api: Any) -> None:
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"ray.io", "leaderworkerset.x-k8s.io", "apps", "batch"} <= groups
    kube_api.set_crd("rayclusters.ray.io", False)
    resources = {r.name for r in client.CustomObjectsApi(api).get_api_resources("ray.io", "v1").resources}
    assert "rayclusters" not in resources and "rayjobs" in resources
    with pytest.raises(ApiException) as err:
        client.CustomObjectsApi(api).list_namespaced_custom_object("ray.io", "v1", NS, "rayclusters")
    assert err.value.status == 404


def test_a_raycluster_makes_its_head_and_workers_and_turns_ready(api: Any) -> None:
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc"},
        "spec": {
            "enableInTreeAutoscaling": True,
            "headGroupSpec": {"rayStartParams": {}, "template": template()},
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": 4,
                    "minReplicas": 2,
                    "maxReplicas": 2,
                    "template": template(),
                }
            ],
        },
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object("ray.io", "v1", NS, "rayclusters", body)
    got = wait_until(lambda: len(pods(api, "ray.io/cluster=rc")) == 3 and pods(api, "ray.io/cluster=rc"))
    heads = [p for p in got if p.metadata.labels["ray.io/node-type"] == "head"]
    assert len(heads) == 1 and heads[0].metadata.name.startswith("rc-head-")
    workers = [p for p in got if p.metadata.labels["ray.io/node-type"] == "worker"]
    assert {p.metadata.labels["ray.io/group"] for p in workers} == {"gpu"}
    assert all(p.metadata.name.startswith("rc-gpu-worker-") for p in workers)
    assert all(
        p.spec.scheduler_name == "vglobal" and p.metadata.owner_references[0].kind == "RayCluster"
        for p in got
    )
    assert "state" not in (custom(api, "ray.io", "rayclusters", "rc").get("status") or {})
    bind_all(api)
    wait_until(lambda: custom(api, "ray.io", "rayclusters", "rc")["status"].get("state") == "ready")
    assert custom(api, "ray.io", "rayclusters", "rc")["status"]["readyWorkerReplicas"] == 2


def test_a_rayjob_runs_its_cluster_then_its_submitter_and_succeeds(api: Any) -> None:
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "annotations": {"vglobal.io/sim-duration": "200ms"}},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": {
                "headGroupSpec": {"template": template()},
                "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "template": template()}],
            },
            "submitterPodTemplate": {
                **template("200ms"),
                "spec": {**template()["spec"], "restartPolicy": "Never"},
            },
        },
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object("ray.io", "v1", NS, "rayjobs", body)
    wait_until(lambda: len(pods(api, "ray.io/is-ray-node=yes")) == 2)
    bind_all(api)
    submitter = wait_until(lambda: pods(api, "job-name=rj"))
    assert submitter[0].metadata.owner_references[0].kind == "Job"
    bind_all(api, "job-name=rj")
    wait_until(lambda: custom(api, "ray.io", "rayjobs", "rj")["status"].get("jobStatus") == "SUCCEEDED")
    assert custom(api, "ray.io", "rayjobs", "rj")["status"]["jobDeploymentStatus"] == "Complete"


def test_a_leaderworkerset_makes_groups_of_size_and_counts_ready_groups(api: Any) -> None:
    body = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws"},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": template()}},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "leaderworkerset.x-k8s.io", "v1", NS, "leaderworkersets", body
    )
    got = wait_until(lambda: len(pods(api, "leaderworkerset.sigs.k8s.io/name=lws")) == 6 and pods(api))
    assert [p.metadata.name for p in got] == ["lws-0", "lws-0-1", "lws-0-2", "lws-1", "lws-1-1", "lws-1-2"]
    labels = got[2].metadata.labels
    assert labels["leaderworkerset.sigs.k8s.io/group-index"] == "0"
    assert labels["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    assert got[0].metadata.owner_references[0].kind == "StatefulSet"
    bind_all(api, "leaderworkerset.sigs.k8s.io/group-index=0")
    group = "leaderworkerset.x-k8s.io"
    wait_until(lambda: custom(api, group, "leaderworkersets", "lws")["status"]["readyReplicas"] == 1)
    bind_all(api)
    wait_until(lambda: custom(api, group, "leaderworkersets", "lws")["status"]["readyReplicas"] == 2)
    client.CustomObjectsApi(api).delete_namespaced_custom_object(group, "v1", NS, "leaderworkersets", "lws")
    wait_until(lambda: not pods(api), what="the groups' pods gone with the set")


def test_a_deployment_statefulset_and_job_make_their_pods(api: Any) -> None:
    apps, batch = client.AppsV1Api(api), client.BatchV1Api(api)
    sel = {"matchLabels": {"app": "x"}}
    apps.create_namespaced_deployment(
        NS, {"metadata": {"name": "d"}, "spec": {"replicas": 2, "selector": sel, "template": template()}}
    )
    apps.create_namespaced_stateful_set(
        NS,
        {
            "metadata": {"name": "s"},
            "spec": {
                "replicas": 2,
                "podManagementPolicy": "Parallel",
                "serviceName": "s",
                "selector": sel,
                "template": template(),
            },
        },
    )
    batch.create_namespaced_job(
        NS,
        {
            "metadata": {"name": "j"},
            "spec": {"parallelism": 2, "completions": 2, "template": never(template("100ms"))},
        },
    )
    wait_until(lambda: len(pods(api)) == 6)
    names = [p.metadata.name for p in pods(api)]
    assert "s-0" in names and "s-1" in names
    dep_pods = [p for p in pods(api) if "pod-template-hash" in p.metadata.labels]
    assert len(dep_pods) == 2 and dep_pods[0].metadata.owner_references[0].kind == "ReplicaSet"
    job_pods = pods(api, "job-name=j")
    assert len(job_pods) == 2 and job_pods[0].metadata.labels["controller-uid"]
    bind_all(api)
    wait_until(lambda: apps.read_namespaced_deployment("d", NS).status.ready_replicas == 2)
    wait_until(lambda: apps.read_namespaced_stateful_set("s", NS).status.ready_replicas == 2)
    wait_until(lambda: batch.read_namespaced_job("j", NS).status.succeeded == 2)
    assert any(c.type == "Complete" for c in batch.read_namespaced_job("j", NS).status.conditions)


def test_an_ordered_statefulset_makes_the_next_pod_once_the_previous_is_ready(api: Any) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_stateful_set(
        NS,
        {
            "metadata": {"name": "o"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": template()},
        },
    )
    wait_until(lambda: pods(api))
    assert [p.metadata.name for p in pods(api)] == ["o-0"]
    bind_all(api)
    wait_until(lambda: len(pods(api)) == 2)
