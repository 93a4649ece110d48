"""The kube agent's modules of the training and serving kinds: the object each writes (its pod
templates labelled with the run and its role, set to the agent's scheduler; a TrainJob's through
a runtime patch of the agent's own; a Pod as itself) and what each reads from its object's status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.kinds import ADAPTERS, kind_of
from vglobal.model.manifests import load_documents

FIXTURES = Path(__file__).parents[2] / "fixtures"
REF = JobRef("u1", 2, "default", "x")


def sample(path: str) -> dict[str, Any]:
    return load_documents((FIXTURES / path).read_text())[0]


def labels_of(tmpl: dict[str, Any]) -> dict[str, str]:
    return dict(tmpl["metadata"]["labels"])


@pytest.mark.parametrize(
    ("path", "roles"),
    [
        ("upstream/jobset/paralleljobs.yaml", ["workers", "driver"]),
        ("upstream/training-operator/simple.yaml", ["master", "worker"]),
        ("upstream/mpi-operator/pi.yaml", ["launcher", "worker"]),
        ("upstream/kuberay/ray-service.mobilenet.yaml", ["head", "worker"]),
        ("workloads/pod.nginx.yaml", ["main"]),
        ("upstream/kthena/sample.yaml", ["prefill", "prefill-worker", "decode", "decode-worker"]),
    ],
)
def test_each_pod_template_is_labelled_with_the_run_and_its_role(path: str, roles: list[str]) -> None:
    raw = sample(path)
    kind = kind_of(raw)
    assert kind is not None
    body = kind.body(raw, REF, "owner-uid", "vglobal")
    templates = kind.templates(body)
    assert [r for r, _ in templates] == roles
    for role, tmpl in templates:
        assert labels_of(tmpl)["vglobal.io/job-uid"] == "u1" and labels_of(tmpl)["vglobal.io/role"] == role
        assert tmpl["spec"]["schedulerName"] == "vglobal"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "owner-uid"


def test_a_pod_is_written_where_pods_live_and_watched_apart_from_other_runs_pods() -> None:
    pod = ADAPTERS[("v1", "Pod")]
    assert pod.collection("ns") == "/api/v1/namespaces/ns/pods" and pod.crd == ""
    body = pod.body(sample("workloads/pod.nginx.yaml"), REF, "o", "vglobal")
    assert body["metadata"]["labels"]["vglobal.io/workload-kind"] == "Pod"
    assert pod.selector == "vglobal.io/job-uid,vglobal.io/workload-kind=Pod"
    assert ADAPTERS[("ray.io/v1", "RayCluster")].selector == "vglobal.io/job-uid"
    assert pod.phase({"status": {"phase": "Failed", "reason": "Evicted"}}) == ("Failed", "Evicted")
    assert pod.phase({"status": {"phase": "Unknown"}}) == ("Pending", "")


def test_a_trainjob_labels_its_node_pods_through_a_runtime_patch_of_the_agents_own() -> None:
    raw = sample("upstream/trainer/02-runtime-patches.yaml")
    raw["metadata"]["annotations"] = {"vglobal.io/sim-duration": "1s", "other": "x"}
    train = ADAPTERS[("trainer.kubeflow.org/v1alpha1", "TrainJob")]
    body = train.body(raw, REF, "o", "vglobal")
    patches = body["spec"]["runtimePatches"]
    assert [p["manager"] for p in patches] == ["example.io/platform-team", "vglobal.io/agent"]
    (rj,) = patches[1]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    meta = rj["template"]["spec"]["template"]["metadata"]
    assert rj["name"] == "node" and meta["labels"]["vglobal.io/role"] == "node"
    assert meta["annotations"] == {"vglobal.io/sim-duration": "1s"}
    again = train.body(body, REF, "o", "vglobal")  # written again (a retry): still one patch of its own
    assert [p["manager"] for p in again["spec"]["runtimePatches"]] == [p["manager"] for p in patches]


def cond(type_: str, status: str = "True", **extra: str) -> dict[str, str]:
    return {"type": type_, "status": status, **extra}


@pytest.mark.parametrize(
    ("kind", "status", "phase"),
    [
        (("jobset.x-k8s.io/v1alpha2", "JobSet"), {"conditions": [cond("Completed")]}, "Succeeded"),
        (
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            {"conditions": [cond("Failed", reason="FailedJobs")]},
            "Failed",
        ),
        (
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            {
                "replicatedJobsStatus": [
                    {"name": "w", "active": 2, "ready": 2},
                    {"name": "d", "active": 1, "ready": 0},
                ]
            },
            "Pending",
        ),
        (
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            {"replicatedJobsStatus": [{"name": "w", "active": 2, "ready": 2}, {"name": "d", "succeeded": 1}]},
            "Running",
        ),
        (("kubeflow.org/v1", "PyTorchJob"), {"conditions": [cond("Created"), cond("Running")]}, "Running"),
        (
            ("kubeflow.org/v1", "PyTorchJob"),
            {"conditions": [cond("Running", "False"), cond("Succeeded")]},
            "Succeeded",
        ),
        (("kubeflow.org/v2beta1", "MPIJob"), {"conditions": [cond("Created")]}, "Pending"),
        (("kubeflow.org/v2beta1", "MPIJob"), {"conditions": [cond("Failed")]}, "Failed"),
        (("trainer.kubeflow.org/v1alpha1", "TrainJob"), {"conditions": [cond("Complete")]}, "Succeeded"),
        (
            ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
            {"jobsStatus": [{"name": "node", "active": 1, "ready": 1}]},
            "Running",
        ),
        (("ray.io/v1", "RayService"), {"conditions": [cond("Ready", "False")]}, "Pending"),
        (("ray.io/v1", "RayService"), {"conditions": [cond("Ready")]}, "Running"),
        (("ray.io/v1", "RayService"), {"serviceStatus": "Running"}, "Running"),
    ],
)
def test_each_kind_reads_its_run_from_its_status(
    kind: tuple[str, str], status: dict[str, Any], phase: str
) -> None:
    assert ADAPTERS[kind].phase({"spec": {}, "status": status})[0] == phase
