"""A Volcano PodGroup applied with the plain pods naming it is one job: its pods are its tasks
(alike pods one task), its gang minMember and minTaskMember, its queue and priority class the
PodGroup's; the kube agent writes the PodGroup and then each pod, labelled with the run."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.kinds import kind_of
from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.manifests import load_documents, manifest_to_yaml, parse_manifests

SAMPLE = Path(__file__).parents[2] / "fixtures" / "workloads" / "podgroup.spark.yaml"


def docs() -> list[dict[str, Any]]:
    return load_documents(SAMPLE.read_text())


def text(ds: list[dict[str, Any]]) -> str:
    return "---\n".join(manifest_to_yaml(d) for d in ds)


def test_a_podgroup_and_its_pods_are_one_job_of_its_gang() -> None:
    (job,) = parse_manifests(SAMPLE.read_text())
    assert isinstance(job, Job) and job.name == "spark-pi" and job.raw["kind"] == "PodGroup"
    assert [(t.name, t.replicas) for t in job.tasks] == [("driver", 1), ("executor", 2)]
    assert job.min_available == 3 and {t: n for t, _, n in job.gang()} == {"driver": 1, "executor": 2}
    assert job.queue == "default" and job.queue_from == "spec.queue"
    assert [t.gang_from for t in job.tasks] == ["spec.minMember", "spec.minTaskMember.executor"]


def test_the_gang_may_be_fewer_than_the_pods_and_pods_alike_without_task_spec_group() -> None:
    ds = docs()
    ds[0]["spec"] = {"minMember": 2, "priorityClassName": "high", "queue": "research"}
    for pod in ds[1:]:
        del pod["metadata"]["annotations"]["volcano.sh/task-spec"]
        pod["spec"]["containers"][0]["name"] = "c"
    (job,) = parse_manifests(text(ds))
    assert isinstance(job, Job)
    # the driver and the first executor are alike now: one task named by its first pod
    assert [(t.name, t.replicas) for t in job.tasks] == [("spark-pi-driver", 3)]
    assert job.min_available == 2 and job.queue == "research" and job.priority_class_name == "high"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda ds: ds[0]["spec"].update(minMember=4), r"spec.minMember: 4 is more than the 3 pods"),
        (lambda ds: ds[0]["spec"].update(minTaskMember={"ps": 1}), r"spec.minTaskMember.ps: no task 'ps'"),
        (lambda ds: ds[0]["spec"].update(minResources={"cpu": "lots"}), r"spec.minResources.cpu"),
        (lambda ds: ds.__delitem__(slice(1, None)), r"metadata.name: no pod names this PodGroup"),
        (lambda ds: ds.pop(0), r'names PodGroup "spark-pi", which is not given with it'),
    ],
)
def test_what_cannot_be_a_podgroup_job_is_refused_naming_the_field(change: Any, message: str) -> None:
    ds = docs()
    change(ds)
    with pytest.raises(ManifestError, match=message):
        parse_manifests(text(ds))


def test_the_kube_agent_writes_the_podgroup_then_each_pod_of_the_run() -> None:
    (job,) = parse_manifests(SAMPLE.read_text())
    assert isinstance(job, Job)
    raw = copy.deepcopy(job.raw)
    kind = kind_of(raw)
    assert kind is not None and kind.crd == "podgroups.scheduling.volcano.sh"
    ref = JobRef("u1", 2, "default", "spark-pi")
    body = kind.body(raw, ref, "owner", "vglobal")
    assert "vglobal.io/pods" not in body["metadata"]["annotations"] and body["spec"]["minMember"] == 3
    pods = kind.extras(raw, ref, "owner", "vglobal")
    assert [p.item.rsplit("/", 1)[1] for p in pods] == ["spark-pi-driver", "spark-pi-exec-1", "spark-pi-exec-2"]
    for p in pods:
        meta = p.body["metadata"]
        assert meta["labels"]["vglobal.io/job-uid"] == "u1" and meta["ownerReferences"][0]["uid"] == "owner"
        assert meta["annotations"]["scheduling.k8s.io/group-name"] == "spark-pi"
        assert p.body["spec"]["schedulerName"] == "vglobal" and p.collection == "/api/v1/namespaces/default/pods"
    assert [p.body["metadata"]["labels"]["vglobal.io/role"] for p in pods] == ["driver", "executor", "executor"]
    assert kind.roles_of(raw) == ["driver", "executor"]
    assert kind.phase({"status": {"phase": "Running"}})[0] == "Pending"  # its pods end the run
    assert kind.phase({"status": {"phase": "Completed"}})[0] == "Succeeded"
