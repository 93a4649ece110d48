"""The workload kinds read into jobs: gangs as Volcano and KubeRay derive them, fields named."""

from __future__ import annotations

import pytest
import yaml

from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.model.preemptable import unpreemptable_tasks
from vglobal.model.workloads import READERS, kind_name, long_running, parse_run

POD = "spec: {containers: [{name: c, image: i, resources: {requests: {cpu: '1', memory: 1Gi}}}]}"


def ray_cluster(autoscaling: bool, replicas: int = 4, low: int = 2, extra: str = "") -> str:
    return f"""
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rc
  labels: {{volcano.sh/queue-name: team-a, ray.io/priority-class-name: high{extra}}}
spec:
  enableInTreeAutoscaling: {str(autoscaling).lower()}
  headGroupSpec:
    template: {{{POD}}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: {replicas}
    minReplicas: {low}
    maxReplicas: 8
    template: {{{POD}}}
"""


def one(text: str) -> Job:
    [job] = parse_manifests(text)
    assert isinstance(job, Job)
    return job


def test_a_raycluster_with_autoscaling_gangs_head_and_min_replicas_and_keeps_the_rest_elastic() -> None:
    job = one(ray_cluster(autoscaling=True))
    assert [(t.name, t.replicas, t.min_available) for t in job.tasks] == [("head", 1, 1), ("gpu", 4, 2)]
    assert job.min_available == 3 and job.queue == "team-a" and job.priority_class_name == "high"
    assert job.gang_request().get("cpu") == 3000  # head + 2 workers of 1 cpu
    assert job.raw["kind"] == "RayCluster"  # the agent writes the object from it unchanged


def test_a_raycluster_without_autoscaling_gangs_every_replica() -> None:
    job = one(ray_cluster(autoscaling=False))
    assert job.min_available == 5


def test_a_rayjob_adds_the_submitter_pod_kuberay_makes_in_k8s_job_mode() -> None:
    doc = yaml.safe_load(ray_cluster(autoscaling=False, replicas=1, low=1))
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj"},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": doc["spec"]},
    }
    job = parse_run(rayjob)
    assert [t.name for t in job.tasks] == ["head", "gpu", "submitter"]
    assert job.tasks[-1].pod_request.get("cpu") == 500
    rayjob["spec"]["submissionMode"] = "HTTPMode"
    assert [t.name for t in parse_run(rayjob).tasks] == ["head", "gpu"]


def test_a_leaderworkerset_is_its_groups_of_leader_and_workers() -> None:
    job = parse_run(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws", "labels": {"volcano.sh/network-topology-mode": "hard"}},
            "spec": {
                "replicas": 3,
                "leaderWorkerTemplate": {"size": 4, "workerTemplate": yaml.safe_load(POD)},
            },
        }
    )
    assert [(t.name, t.replicas, t.min_available) for t in job.tasks] == [("leader", 3, 1), ("worker", 9, 3)]
    # Each group of 4 is a gang of its own: one whole group starts the set, the others start whole.
    assert job.min_available == 4 and job.group_size() == 4
    [groups] = job.sub_group_policies()
    assert (groups.sub_group_size, groups.min_sub_groups) == (4, 1)
    assert groups.match_label_keys == ("leaderworkerset.sigs.k8s.io/group-index",)
    assert job.network_topology is not None and job.network_topology.mode == "hard"


@pytest.mark.parametrize(
    ("kind", "api", "spec", "notes", "pods", "gang"),
    [
        ("Deployment", "apps/v1", {"replicas": 4}, {"scheduling.volcano.sh/group-min-member": "3"}, 4, 3),
        ("StatefulSet", "apps/v1", {"replicas": 2}, {}, 2, 1),
        ("Job", "batch/v1", {"parallelism": 3, "completions": 6}, {}, 3, 3),
        ("Job", "batch/v1", {"parallelism": 4}, {"scheduling.volcano.sh/group-min-member": "2"}, 4, 2),
    ],
)
def test_replicated_kinds_gang_by_the_annotation_or_their_parallelism(
    kind: str, api: str, spec: dict[str, object], notes: dict[str, str], pods: int, gang: int
) -> None:
    doc = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "w", "annotations": notes},
        "spec": {**spec, "template": yaml.safe_load(POD)},
    }
    job = parse_run(doc)
    assert [(t.name, t.replicas) for t in job.tasks] == [("main", pods)]
    assert job.min_available == gang


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (ray_cluster(True, replicas=4, low=9), "spec.workerGroupSpecs[0].minReplicas"),
        (ray_cluster(True).replace("replicas: 4", "replicas: four"), "spec.workerGroupSpecs[0].replicas"),
        (
            ray_cluster(True).replace("groupName: gpu", "groupName: GPU_x"),
            "spec.workerGroupSpecs[0].groupName: invalid name",
        ),
        (
            ray_cluster(True).replace("groupName: gpu", "groupName: ''"),
            "spec.workerGroupSpecs[0].groupName: required",
        ),
        (
            ray_cluster(True).replace("groupName: gpu", "groupName: head"),
            "spec.workerGroupSpecs[0].groupName: duplicate",
        ),
        (
            ray_cluster(True, extra=", volcano.sh/network-topology-highest-tier-allowed: two"),
            "metadata.labels",
        ),
        (
            ray_cluster(True).replace("headGroupSpec:\n    template:", "headGroupSpec:\n    tmpl:"),
            "spec.headGroupSpec.template",
        ),
        (ray_cluster(True).replace("  name: rc", "  name: Bad_Name"), "metadata.name"),
    ],
)
def test_bad_workload_manifests_are_refused_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_manifests(text)
    assert field in str(err.value)


def test_a_deployment_whose_gang_is_larger_than_its_replicas_is_refused() -> None:
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "annotations": {"scheduling.volcano.sh/group-min-member": "5"}},
        "spec": {"replicas": 2, "template": yaml.safe_load(POD)},
    }
    with pytest.raises(ManifestError, match="group-min-member"):
        parse_run(doc)


@pytest.mark.parametrize(
    ("api", "kind", "shown"),
    [
        ("batch.volcano.sh/v1alpha1", "Job", "VolcanoJob"),
        ("batch/v1", "Job", "Job"),
        ("ray.io/v1", "RayCluster", "RayCluster"),
        ("ray.io/v1", "RayJob", "RayJob"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "LeaderWorkerSet"),
        ("apps/v1", "Deployment", "Deployment"),
        ("apps/v1", "StatefulSet", "StatefulSet"),
    ],
)
def test_the_kind_a_job_was_submitted_as_tells_a_volcano_job_from_a_batch_job(
    api: str, kind: str, shown: str
) -> None:
    assert kind_name({"apiVersion": api, "kind": kind}) == shown


def test_long_running_kinds_are_pinned_unless_they_say_true() -> None:
    assert [k for _, k in READERS if long_running(*_api_kind(k))] == [
        "RayCluster",
        "LeaderWorkerSet",
        "Deployment",
        "StatefulSet",
        "RayService",
        "ModelServing",
    ]
    assert not long_running("batch.volcano.sh/v1alpha1", "Job") and not long_running("v9", "Deployment")
    pinned = unpreemptable_tasks(None, None, {}, {}, ("head", "workers"), default=False)
    assert pinned == {"head", "workers"}
    assert unpreemptable_tasks("true", None, {}, {}, ("head",), default=False) == frozenset()
    assert unpreemptable_tasks(None, "TRUE", {}, {}, ("head",), default=False) == frozenset()
    assert unpreemptable_tasks(None, None, {"head": "1"}, {}, ("head", "w"), default=False) == {"w"}
    assert unpreemptable_tasks(None, None, {}, {}, ("head",)) == frozenset()  # other kinds: preemptable


def _api_kind(kind: str) -> tuple[str, str]:
    return next((a, k) for a, k in READERS if k == kind)
