"""CronJob manifests: defaults, every refusal naming its field, the template checked as a Job, runs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from vglobal.model.cronjob import (
    INSTANTIATE_ANNOTATION,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    ConcurrencyPolicy,
    CronJob,
    manual_run_job,
    parse_cron_job,
    run_job,
    run_name,
)
from vglobal.model.errors import ManifestError
from vglobal.model.job import parse_job
from vglobal.model.manifests import parse_manifest, parse_manifests

JOB_SPEC: dict[str, Any] = {
    "queue": "research",
    "tasks": [
        {
            "name": "main",
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]
                }
            },
        }
    ],
}
DOC: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "CronJob",
    "metadata": {"name": "report", "namespace": "team-a", "labels": {"app": "report"}},
    "spec": {
        "schedule": "0 3 * * *",
        "jobTemplate": {
            "metadata": {"labels": {"run": "yes"}, "annotations": {"note": "x"}},
            "spec": JOB_SPEC,
        },
    },
}


def cron(**spec: Any) -> CronJob:
    doc = copy.deepcopy(DOC)
    doc["spec"].update(spec)
    return parse_cron_job(doc)


def problems(change: Callable[[dict[str, Any]], None]) -> list[tuple[str, str]]:
    doc = copy.deepcopy(DOC)
    change(doc)
    with pytest.raises(ManifestError) as info:
        parse_cron_job(doc)
    return list(info.value.problems)


def test_defaults_are_volcanos() -> None:
    c = cron()
    assert (c.name, c.namespace, c.labels) == ("report", "team-a", {"app": "report"})
    assert c.time_zone is None and c.schedule.time_zone == "UTC"
    assert c.concurrency_policy == ConcurrencyPolicy.Allow
    assert c.starting_deadline_seconds is None and c.suspend is False
    assert (c.successful_jobs_history_limit, c.failed_jobs_history_limit) == (3, 1)
    assert c.template_labels == {"run": "yes"} and c.job_spec == JOB_SPEC


def test_every_field_read() -> None:
    c = cron(
        timeZone="Europe/Berlin",
        concurrencyPolicy="Replace",
        startingDeadlineSeconds=120,
        suspend=True,
        successfulJobsHistoryLimit=0,
        failedJobsHistoryLimit=5,
    )
    assert c.schedule.time_zone == "Europe/Berlin" and c.time_zone == "Europe/Berlin"
    assert c.concurrency_policy == ConcurrencyPolicy.Replace
    assert (c.starting_deadline_seconds, c.suspend) == (120, True)
    assert (c.successful_jobs_history_limit, c.failed_jobs_history_limit) == (0, 5)


def set_spec(**kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["spec"].update(kw)


def set_name(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["metadata"].update(name=name)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (set_spec(schedule="61 * * * *"), "spec.schedule", "minute: 61 is outside 0-59"),
        (set_spec(schedule="TZ=UTC 0 * * * *"), "spec.schedule", "set spec.timeZone instead"),
        (set_spec(schedule=5), "spec.schedule", "must be a string"),
        (lambda d: d["spec"].pop("schedule"), "spec.schedule", "required"),
        (set_spec(timeZone="Mars/Base"), "spec.timeZone", 'unknown time zone "Mars/Base"'),
        (set_spec(timeZone=""), "spec.timeZone", "not empty"),
        (set_spec(concurrencyPolicy="Sometimes"), "spec.concurrencyPolicy", '"Allow", "Forbid" or "Replace"'),
        (set_spec(startingDeadlineSeconds=-1), "spec.startingDeadlineSeconds", "must be >= 0"),
        (set_spec(successfulJobsHistoryLimit=-1), "spec.successfulJobsHistoryLimit", "must be >= 0"),
        (set_spec(failedJobsHistoryLimit=-2), "spec.failedJobsHistoryLimit", "must be >= 0"),
        (set_spec(failedJobsHistoryLimit=2**31), "spec.failedJobsHistoryLimit", "must be at most 2147483647"),
        (set_spec(suspend="yes"), "spec.suspend", "must be true or false"),
        (lambda d: d["spec"].pop("jobTemplate"), "spec.jobTemplate", "required"),
        (set_name("x" * 53), "metadata.name", "no more than 52 characters"),
        (set_name("Report"), "metadata.name", "DNS-1123 label"),
        (set_name(""), "metadata.name", "required"),
        (lambda d: d["metadata"].update(namespace="A_B"), "metadata.namespace", "DNS-1123 label"),
    ],
)
def test_refusals_name_the_field(change: Callable[[dict[str, Any]], None], field: str, words: str) -> None:
    found = problems(change)
    assert any(f == field and words in m for f, m in found), found


def test_a_52_character_name_fits_and_its_runs_stay_valid_names() -> None:
    # 52 characters pass the name rule; the pods of such runs are then too long for any task.
    found = problems(set_name("r" * 52))
    assert [f for f, _ in found] == ["spec.jobTemplate.spec.tasks[0].name"]
    name = "r" * 40
    c = parse_cron_job({**DOC, "metadata": {"name": name}})
    made = run_job(c, datetime(2100, 1, 1, tzinfo=UTC))
    assert made.name == f"{name}-68374080" and len(made.name) <= 63


def bad_job_spec(spec: dict[str, Any]) -> None:
    """A Job spec with problems at several depths."""
    spec["minAvailable"] = 7
    spec["plugins"] = {"nope": []}
    task = spec["tasks"][0]
    task["replicas"] = -1
    task["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    task["policies"] = [{"event": "PodEvicted", "action": "Explode"}]


def test_the_template_is_refused_exactly_as_a_submitted_job_under_its_own_path() -> None:
    job_doc = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}
    job_doc["spec"] = copy.deepcopy(JOB_SPEC)
    bad_job_spec(job_doc["spec"])
    with pytest.raises(ManifestError) as as_job:
        parse_job(job_doc)
    found = problems(lambda d: bad_job_spec(d["spec"]["jobTemplate"]["spec"]))
    expected = [("spec.jobTemplate." + f, m) for f, m in as_job.value.problems]
    assert found == expected
    assert len(found) >= 4


def test_template_metadata_and_pod_names_are_checked() -> None:
    found = problems(
        lambda d: d["spec"]["jobTemplate"]["metadata"].update(annotations={"vglobal.io/sim-duration": "soon"})
    )
    assert found[0][0] == "spec.jobTemplate.metadata.annotations[vglobal.io/sim-duration]"
    # A run's pods are <cronjob>-<minutes>-<task>-<index>: a long task name shows only in a cron.
    long_task = "t" * 50
    found = problems(lambda d: d["spec"]["jobTemplate"]["spec"]["tasks"][0].update(name=long_task))
    assert found[0][0] == "spec.jobTemplate.spec.tasks[0].name" and "longer than 63" in found[0][1]
    job_doc = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "report"}}
    job_doc["spec"] = copy.deepcopy(JOB_SPEC)
    job_doc["spec"]["tasks"][0]["name"] = long_task
    parse_job(job_doc)  # the same template is a valid Job under the cron's own name


def test_empty_template_spec_needs_tasks() -> None:
    found = problems(lambda d: d["spec"]["jobTemplate"].pop("spec"))
    assert found == [("spec.jobTemplate.spec.tasks", "at least one task is required")]


def test_parsed_through_the_manifest_entry_point_with_other_kinds() -> None:
    import yaml

    text = yaml.safe_dump(DOC) + "---\n" + yaml.safe_dump({**DOC, "metadata": {"name": "second"}})
    assert [type(m) for m in parse_manifests(text)] == [CronJob, CronJob]
    with pytest.raises(ManifestError, match=r"use batch.volcano.sh/v1alpha1"):
        parse_manifest({**DOC, "apiVersion": "batch/v1"})
    bad = yaml.safe_dump(
        {**DOC, "metadata": {"name": "third"}, "spec": {**DOC["spec"], "schedule": "@often"}}
    )
    with pytest.raises(ManifestError) as info:
        parse_manifests(text + "---\n" + bad)
    assert str(info.value).startswith(
        'document[2] (CronJob "third"): spec.schedule: unknown schedule "@often"'
    )


# ---------------------------------------------------------------- runs


def test_run_names_are_minutes_since_the_epoch() -> None:
    t = datetime(2024, 3, 10, 6, 30, 59, tzinfo=UTC)
    assert run_name("report", t) == f"report-{int(t.timestamp()) // 60}" == "report-28500870"
    with pytest.raises(ValueError, match="timezone-aware"):
        run_name("report", datetime(2024, 1, 1))


def test_a_run_is_the_template_named_annotated_and_owned() -> None:
    c = cron(timeZone="America/New_York")
    t = datetime(2024, 3, 10, 8, 0, tzinfo=UTC)
    made = run_job(c, t)
    assert made.name == run_name("report", t) and made.namespace == "team-a"
    assert made.labels == {"run": "yes"}
    assert made.annotations == {"note": "x", SCHEDULED_TIMESTAMP_ANNOTATION: "2024-03-10T04:00:00-04:00"}
    assert made.queue == "research" and [t.replicas for t in made.tasks] == [2]
    [owner] = made.raw["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "report", True)
    assert run_job(cron(), t).annotations[SCHEDULED_TIMESTAMP_ANNOTATION] == "2024-03-10T08:00:00Z"
    # The run does not share the CronJob's template: changing one leaves the other.
    made.raw["spec"]["tasks"][0]["replicas"] = 9
    assert c.job_spec["tasks"][0]["replicas"] == 2


def test_a_manual_run_takes_the_given_name() -> None:
    made = manual_run_job(cron(), "report-now")
    assert made.name == "report-now" and made.annotations[INSTANTIATE_ANNOTATION] == "manual"
    with pytest.raises(ManifestError, match=r"metadata.name: invalid name"):
        manual_run_job(cron(), "Report Now")
