"""The training operators' emulated controllers (ctl_training.py) and the RayService's: the pods and
child objects each makes, named and labelled as upstream does, and the status it writes as they run
and end."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.kubeapi.test_workloads import NS, api, bind_all, pods, template  # noqa: F401
from tests.kubeapi.testkit import wait_until


def create(api: Any, group: str, version: str, plural: str, body: dict[str, Any]) -> None:  # noqa: F811
    client.CustomObjectsApi(api).create_namespaced_custom_object(group, version, NS, plural, body)


def status(api: Any, group: str, version: str, plural: str, name: str) -> dict[str, Any]:  # noqa: F811
    got = client.CustomObjectsApi(api).get_namespaced_custom_object(group, version, NS, plural, name)
    return dict(got.get("status") or {})


def true(st: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in st.get("conditions") or [])


def test_a_jobset_makes_a_job_per_replica_and_completes_with_them(api: Any) -> None:  # noqa: F811
    job = {"parallelism": 2, "completions": 2, "template": template("200ms")}
    body = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": job}}]},
    }
    create(api, "jobset.x-k8s.io", "v1alpha2", "jobsets", body)
    got = wait_until(lambda: len(p := pods(api, "jobset.sigs.k8s.io/jobset-name=js")) == 4 and p)
    assert {p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] for p in got} == {"w"}
    assert {p.metadata.owner_references[0].name for p in got} == {"js-w-0", "js-w-1"}
    bind_all(api)
    st = wait_until(
        lambda: true(s := status(api, "jobset.x-k8s.io", "v1alpha2", "jobsets", "js"), "Completed") and s
    )
    assert st["replicatedJobsStatus"] == [
        {"name": "w", "ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0}
    ]


def test_a_pytorchjob_makes_master_and_workers_and_succeeds_with_its_master(api: Any) -> None:  # noqa: F811
    specs = {t: {"replicas": n, "template": template("200ms")} for t, n in (("Master", 1), ("Worker", 2))}
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {"pytorchReplicaSpecs": specs},
    }
    create(api, "kubeflow.org", "v1", "pytorchjobs", body)
    got = wait_until(lambda: len(p := pods(api, "training.kubeflow.org/job-name=pt")) == 3 and p)
    assert [p.metadata.name for p in got] == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    bind_all(api)
    wait_until(lambda: true(status(api, "kubeflow.org", "v1", "pytorchjobs", "pt"), "Succeeded"))


def test_an_mpijob_starts_its_launcher_once_its_workers_run(api: Any) -> None:  # noqa: F811
    specs = {
        "Launcher": {"replicas": 1, "template": template("200ms")},
        "Worker": {"replicas": 2, "template": template()},
    }
    body = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "mpi"},
        "spec": {"mpiReplicaSpecs": specs},
    }
    create(api, "kubeflow.org", "v2beta1", "mpijobs", body)
    workers = wait_until(lambda: len(p := pods(api, "training.kubeflow.org/job-name=mpi")) == 2 and p)
    assert [p.metadata.name for p in workers] == ["mpi-worker-0", "mpi-worker-1"]
    bind_all(api)
    wait_until(lambda: len(pods(api, "job-name=mpi-launcher")) == 1)
    bind_all(api)
    wait_until(lambda: true(status(api, "kubeflow.org", "v2beta1", "mpijobs", "mpi"), "Succeeded"))
    wait_until(lambda: not pods(api, "training.kubeflow.org/replica-type=worker"))  # cleanPodPolicy: Running


def test_a_trainjob_runs_its_runtimes_jobset_with_its_patched_pods(api: Any) -> None:  # noqa: F811
    patch = {
        "template": {
            "spec": {"template": {"metadata": {"annotations": {"vglobal.io/sim-duration": "200ms"}}}}
        }
    }
    body = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "1"}}},
            "runtimePatches": [
                {
                    "manager": "x",
                    "trainingRuntimeSpec": {
                        "template": {"spec": {"replicatedJobs": [{"name": "node", **patch}]}}
                    },
                }
            ],
        },
    }
    create(api, "trainer.kubeflow.org", "v1alpha1", "trainjobs", body)
    got = wait_until(lambda: len(p := pods(api, "jobset.sigs.k8s.io/jobset-name=tj")) == 2 and p)
    assert {p.spec.scheduler_name for p in got} == {"vglobal"}
    assert got[0].spec.containers[0].resources.requests == {"cpu": "1"}
    bind_all(api)
    wait_until(lambda: true(status(api, "trainer.kubeflow.org", "v1alpha1", "trainjobs", "tj"), "Complete"))


def test_a_rayservice_makes_its_ray_cluster_and_turns_ready(api: Any) -> None:  # noqa: F811
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "svc"},
        "spec": {"rayClusterConfig": {"headGroupSpec": {"template": template()}, "workerGroupSpecs": []}},
    }
    create(api, "ray.io", "v1", "rayservices", body)
    (head,) = wait_until(lambda: pods(api, "ray.io/node-type=head"))
    assert head.metadata.name.startswith("svc-raycluster-")
    bind_all(api)
    wait_until(lambda: true(status(api, "ray.io", "v1", "rayservices", "svc"), "Ready"))
