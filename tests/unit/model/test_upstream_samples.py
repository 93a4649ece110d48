"""The samples JobSet, Kubeflow (training operator, MPI operator, Trainer) and KubeRay ship
(tests/fixtures/upstream, unchanged) read into jobs with the gangs their Volcano integrations give
them, each task saying the field its gang count came from; and the fields that change the gang."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.manifests import load_documents, parse_manifest
from vglobal.model.resources import ResourceVector

UPSTREAM = Path(__file__).parents[2] / "fixtures" / "upstream"


def doc(path: str) -> dict[str, Any]:
    (only,) = load_documents((UPSTREAM / path).read_text())
    return only


def read(d: dict[str, Any]) -> Job:
    before = copy.deepcopy(d)
    job = parse_manifest(d)
    assert isinstance(job, Job) and job.raw == before  # the manifest is kept as given
    return job


def gang(job: Job) -> dict[str, int]:
    return {name: n for name, _, n in job.gang()}


def counts(job: Job) -> dict[str, int]:
    return {t.name: t.replicas for t in job.tasks}


def test_jobsets_parallel_jobs_sample_is_one_gang_of_all_its_pods() -> None:
    job = read(doc("jobset/paralleljobs.yaml"))
    assert counts(job) == {"workers": 4, "driver": 1} and gang(job) == {"workers": 4, "driver": 1}
    assert job.queue == "default" and job.min_available == 5
    assert job.tasks[0].gang_from == (
        "spec.replicatedJobs[0].template.spec.parallelism 4 x spec.replicatedJobs[0].replicas 1"
    )


def test_a_jobset_gangs_replicas_times_parallelism_or_volcanos_annotation() -> None:
    d = doc("jobset/coordinator.yaml")
    d["spec"]["replicatedJobs"][0]["replicas"] = 3
    assert counts(read(d)) == {"workers": 12, "driver": 1} and read(d).min_available == 13
    d["metadata"]["annotations"] = {
        "scheduling.volcano.sh/group-min-member": "5",
        "scheduling.volcano.sh/queue-name": "research",
    }
    job = read(d)
    assert job.min_available == 5 and gang(job) == {"workers": 5} and job.queue == "research"
    assert job.tasks[1].gang_from == "metadata.annotations[scheduling.volcano.sh/group-min-member]"
    d["metadata"]["annotations"]["scheduling.volcano.sh/group-min-member"] = "14"
    with pytest.raises(ManifestError, match="14 is more than the 13 pods"):
        parse_manifest(d)


def test_the_pytorchjob_sample_is_master_and_worker_in_one_gang() -> None:
    job = read(doc("training-operator/simple.yaml"))
    assert counts(job) == {"master": 1, "worker": 1} and job.min_available == 2
    assert job.namespace == "kubeflow"
    assert job.tasks[1].gang_from == "spec.pytorchReplicaSpecs.Worker.replicas (all replicas)"


def test_a_pytorchjobs_run_policy_names_its_gang_queue_and_priority() -> None:
    d = doc("training-operator/simple.yaml")
    d["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 7
    d["spec"]["runPolicy"] = {
        "schedulingPolicy": {"minAvailable": 4, "queue": "train", "priorityClass": "high"}
    }
    job = read(d)
    assert job.min_available == 4 and gang(job) == {"master": 1, "worker": 3}
    assert job.queue == "train" and job.priority_class_name == "high"
    assert job.tasks[0].gang_from == "spec.runPolicy.schedulingPolicy.minAvailable"
    d["spec"]["pytorchReplicaSpecs"]["Chief"] = d["spec"]["pytorchReplicaSpecs"]["Master"]
    with pytest.raises(ManifestError, match=r"spec.pytorchReplicaSpecs.Chief: unknown replica type"):
        parse_manifest(d)


def test_the_mpijob_sample_is_its_launcher_and_two_workers() -> None:
    job = read(doc("mpi-operator/pi.yaml"))
    assert counts(job) == {"launcher": 1, "worker": 2} and job.min_available == 3
    one = ResourceVector.from_quantities({"cpu": "1", "memory": "1Gi"})
    assert job.tasks[1].pod_request == one and job.total_request() == one.scale(3)


def test_the_trainjob_samples_are_their_num_nodes_on_the_torch_runtime() -> None:
    job = read(doc("trainer/01-multi-node.yaml"))
    assert counts(job) == {"node": 3} and job.min_available == 3
    assert job.tasks[0].gang_from == "spec.trainer.numNodes"
    (node,) = job.tasks[0].template["spec"]["containers"]
    assert node["image"].startswith("pytorch/pytorch") and node["command"][0] == "torchrun"
    patched = read(doc("trainer/02-runtime-patches.yaml"))
    assert counts(patched) == {"node": 2}
    assert patched.tasks[0].pod_request == ResourceVector.from_quantities({"cpu": "2", "memory": "4Gi"})


def test_a_trainjob_without_num_nodes_takes_its_runtimes_or_must_say_it() -> None:
    d = doc("trainer/01-multi-node.yaml")
    del d["spec"]["trainer"]["numNodes"]
    d["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    job = read(d)
    assert counts(job) == {"node": 1} and job.queue == "team-a"
    assert job.tasks[0].gang_from == "mlPolicy.numNodes of the torch-distributed runtime"
    d["spec"]["runtimeRef"]["name"] = "deepspeed-distributed"
    with pytest.raises(
        ManifestError, match=r'spec.trainer.numNodes: required: the hub does not know the runtime "deepspeed'
    ):
        parse_manifest(d)
    d["spec"]["trainer"]["numNodes"] = 2
    assert counts(read(d)) == {"node": 2}


def test_the_rayservice_sample_is_its_ray_cluster() -> None:
    job = read(doc("kuberay/ray-service.mobilenet.yaml"))
    assert counts(job) == {"head": 1, "worker": 1} and job.min_available == 2
    assert job.tasks[1].gang_from == "spec.rayClusterConfig.workerGroupSpecs[0].replicas (autoscaling off)"


def test_a_plain_pod_is_a_gang_of_one_and_a_pod_without_its_podgroup_is_refused() -> None:
    d = load_documents((UPSTREAM.parent / "workloads" / "pod.nginx.yaml").read_text())[0]
    d["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "web"}
    d["spec"]["priorityClassName"] = "high"
    job = read(d)
    assert counts(job) == {"main": 1} and job.min_available == 1 and job.queue == "web"
    assert job.priority_class_name == "high" and job.tasks[0].gang_from == "1 pod (a plain Pod)"
    d["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "pg"
    with pytest.raises(
        ManifestError, match=r'metadata.annotations\[scheduling.k8s.io/group-name\]: names PodGroup "pg", which is not'
    ):
        parse_manifest(d)


def test_kthenas_modelserving_sample_is_one_servinggroup_of_its_roles() -> None:
    job = read(doc("kthena/sample.yaml"))
    assert counts(job) == {"prefill": 1, "prefill-worker": 3, "decode": 1, "decode-worker": 3}
    assert job.min_available == 8 and job.group_size() == 8 and job.queue == "default"
    assert job.tasks[1].gang_from.startswith("spec.template.roles[0].workerReplicas 3 per entry")


def test_a_modelservings_gang_policy_groups_and_topology() -> None:
    d = doc("kthena/sample.yaml")
    d["spec"]["replicas"] = 3
    d["spec"]["template"]["gangPolicy"] = {"minRoleReplicas": {"prefill": 1}}
    d["spec"]["template"]["roles"][0]["replicas"] = 2
    d["spec"]["template"]["networkTopology"] = {"groupPolicy": {"mode": "hard", "highestTierAllowed": 1}}
    job = read(d)
    # 3 groups of 2 prefill entries (6 workers each) and 1 decode entry (3 workers); a group's gang
    # is 1 prefill entry with its 3 workers and the whole decode role
    assert counts(job) == {"prefill": 6, "prefill-worker": 18, "decode": 3, "decode-worker": 9}
    assert gang(job) == {"prefill": 1, "prefill-worker": 3, "decode": 1, "decode-worker": 3}
    assert job.group_size() == 12 and job.network_topology is not None
    assert job.network_topology.highest_tier_allowed == 1
    d["spec"]["template"]["gangPolicy"] = {"minRoleReplicas": {"embed": 1}}
    with pytest.raises(ManifestError, match=r"spec.template.gangPolicy.minRoleReplicas.embed: no role 'embed'"):
        read(d)
