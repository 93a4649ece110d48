"""`describe job`'s Gang section: each task's share of the gang and the field it was read from."""

from __future__ import annotations

from vglobal.cli.describe_gang import gang_lines

POD = {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}}}]}}


def test_a_volcano_job_names_its_tasks_min_available() -> None:
    lines = gang_lines(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "x"},
            "spec": {
                "minAvailable": 3,
                "tasks": [
                    {"name": "ps", "replicas": 1, "template": POD},
                    {"name": "w", "replicas": 4, "minAvailable": 2, "template": POD},
                ],
            },
        }
    )
    assert lines[0] == "Gang (derived from the VolcanoJob):"
    assert lines[2].split() == ["ps", "1", "1", "cpu=2", "spec.tasks[0].replicas"]
    assert lines[3].split() == ["w", "4", "2", "cpu=2", "spec.tasks[1].minAvailable"]
    assert lines[-1] == "  Must start together: 3 pods, cpu=6 (the whole job: 5 pods, cpu=10)"


def test_a_statefulset_without_the_gang_annotation_gangs_one_pod() -> None:
    lines = gang_lines(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "s"},
            "spec": {"replicas": 3, "template": POD},
        }
    )
    assert "1 pod (no scheduling.volcano.sh/group-min-member annotation)" in lines[2]
    assert lines[-1] == "  Must start together: 1 pod, cpu=2 (the whole job: 3 pods, cpu=6)"


def test_a_manifest_this_version_cannot_read_shows_no_gang() -> None:
    assert gang_lines({"apiVersion": "v9", "kind": "Job", "metadata": {"name": "x"}}) == []
