"""kubectl's apply rules on a stored job: what changed, what may change in each state (naming the
field as Kubernetes does), field managers and server-side conflicts, and `vglobal scale`'s edit."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vglobal.model import apply_rules as r


def deployment(replicas: int = 2, image: str = "vllm:1", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "inference", "labels": {"app": "inference", **labels}},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "m", "image": image}]}},
        },
    }


def vcjob(replicas: int = 2, image: str = "busybox") -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {
            "tasks": [
                {"name": "w", "replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}}
            ]
        },
    }


RUNNING = r.JobState("Deployment", waiting=False, finished=False)
WAITING = r.JobState("Deployment", waiting=True, finished=False)
FINISHED = r.JobState("Deployment", waiting=False, finished=True)


def test_identical_and_server_set_metadata_are_the_same() -> None:
    live = deployment()
    again = copy.deepcopy(live)
    again["metadata"]["generation"] = 7
    again["metadata"]["resourceVersion"] = "12"
    again["status"] = {"readyReplicas": 2}
    assert r.same(live, again)
    assert not r.same(live, deployment(3))


def test_changed_names_leaves_as_kubectl_does() -> None:
    paths = r.changed(deployment(), deployment(3, **{"app.kubernetes.io/name": "x"}))
    assert [r.render(p) for p in paths] == ["metadata.labels[app.kubernetes.io/name]", "spec.replicas"]


def test_running_replicas_labels_annotations_may_change() -> None:
    new = deployment(5, team="a")
    new["metadata"]["annotations"] = {"note": "x"}
    got = r.check_change(deployment(), new, RUNNING)
    assert {r.render(p) for p in got} == {"spec.replicas", "metadata.labels.team", "metadata.annotations.note"}


@pytest.mark.parametrize(
    ("new", "state", "message"),
    [
        (deployment(image="vllm:2"), RUNNING, "spec.template: field is immutable while the job runs"),
        (deployment(3), FINISHED, "spec.replicas: field is immutable once the job finished"),
        (
            deployment(**{"volcano.sh/queue-name": "other"}),
            RUNNING,
            "metadata.labels[volcano.sh/queue-name]: field is immutable while the job runs",
        ),
    ],
)
def test_what_may_not_change_is_named(new: dict[str, Any], state: r.JobState, message: str) -> None:
    with pytest.raises(r.Immutable, match=message.replace("[", r"\[").replace("]", r"\]")):
        r.check_change(deployment(), new, state)


def test_a_running_volcano_jobs_task_template_is_immutable_and_named_whole() -> None:
    state = r.JobState("Job", waiting=False, finished=False)
    with pytest.raises(r.Immutable, match=r"^spec\.tasks\[0\]\.template: field is immutable"):
        r.check_change(vcjob(), vcjob(image="alpine"), state)
    with pytest.raises(r.Immutable, match=r"^spec\.tasks\[0\]\.replicas: field is immutable"):
        r.check_change(vcjob(), vcjob(4), state)  # not a long-running kind: no scaling while it runs


def test_a_waiting_job_takes_any_change_but_its_kind() -> None:
    assert r.check_change(deployment(), deployment(4, image="vllm:2"), WAITING)
    other = deployment()
    other["kind"] = "StatefulSet"
    with pytest.raises(r.Immutable, match=r"^kind: field is immutable"):
        r.check_change(deployment(), other, WAITING)


def test_managers_own_what_they_set_and_server_side_conflicts() -> None:
    created = r.apply({}, {}, deployment(2), r.CLIENT_SIDE_MANAGER)
    assert set(created.managers.values()) == {r.CLIENT_SIDE_MANAGER}
    scaled = r.apply(created.manifest, created.managers, deployment(5), r.SCALE_MANAGER)
    assert scaled.managers["spec.replicas"] == r.SCALE_MANAGER
    assert scaled.managers["spec.template.spec.containers[0].image"] == r.CLIENT_SIDE_MANAGER
    # Server-side apply of replicas 2 by another manager: a conflict naming the field and its owner.
    with pytest.raises(r.Conflict, match=r'1 conflict: conflict with "vglobal-scale": \.spec\.replicas'):
        r.apply(scaled.manifest, scaled.managers, deployment(2), "vglobal", server_side=True)
    # The same value is no conflict; forced, the field changes hands.
    r.apply(scaled.manifest, scaled.managers, deployment(5), "vglobal", server_side=True)
    forced = r.apply(scaled.manifest, scaled.managers, deployment(2), "vglobal", server_side=True, force=True)
    assert forced.manifest["spec"]["replicas"] == 2 and forced.managers["spec.replicas"] == "vglobal"
    # Client-side apply never conflicts.
    assert r.apply(scaled.manifest, scaled.managers, deployment(2), r.CLIENT_SIDE_MANAGER).manifest == deployment(2)


def test_server_side_keeps_fields_other_managers_own_that_it_leaves_out() -> None:
    live = r.apply({}, {}, deployment(2), r.CLIENT_SIDE_MANAGER)
    scaled = r.apply(live.manifest, live.managers, deployment(6), r.SCALE_MANAGER)
    mine = deployment()
    del mine["spec"]["replicas"]
    got = r.apply(scaled.manifest, scaled.managers, mine, "vglobal", server_side=True)
    assert got.manifest["spec"]["replicas"] == 6
    assert got.managers["spec.replicas"] == r.SCALE_MANAGER


def test_scale_sets_each_kinds_replicas() -> None:
    assert r.scale(deployment(2), 7)["spec"]["replicas"] == 7
    assert r.scale(vcjob(2), 3)["spec"]["tasks"][0]["replicas"] == 3  # its only task
    ray = {
        "kind": "RayCluster",
        "spec": {"workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 2}]},
    }
    group = r.scale(ray, 4, "gpu")["spec"]["workerGroupSpecs"][0]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (4, 1, 4)
    with pytest.raises(ValueError, match="--task: 'cpu' is not one of gpu"):
        r.scale(ray, 4, "cpu")
    with pytest.raises(ValueError, match="cannot be scaled"):
        r.scale({"kind": "RayJob", "spec": {}}, 2)
    with pytest.raises(ValueError, match="negative"):
        r.scale(deployment(), -1)
