"""The facts a job's manifest gives admission, taken once at submit (vglobal/model/static_facts.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from vglobal.admission.inputs import Shared, admitted_job
from vglobal.hub.dispatch.facts import facts_of
from vglobal.hub.submit import new_job
from vglobal.model.errors import ManifestError
from vglobal.model.job import parse_job
from vglobal.model.static_facts import manifest_facts
from vglobal.store.repo.jobs import static_of

KEY = "volcano.sh/preemptable"
JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}
TERM = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}


def _task(
    name: str, meta: dict[str, Any] | None = None, spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"name": name, "replicas": 1, "template": {"metadata": meta or {}, "spec": spec or {}}}


def _job(*tasks: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**JOB, "metadata": {"name": "j", **(meta or {})}, "spec": {"tasks": list(tasks)}}


def test_a_plain_job_has_only_its_kind() -> None:
    assert manifest_facts(_job(_task("a"), _task("b"))) == JOB_FACTS


JOB_FACTS = {"api": "batch.volcano.sh/v1alpha1", "kind": "Job"}


def test_the_templates_preemptable_annotations_and_labels_by_task_in_order() -> None:
    facts = manifest_facts(
        _job(
            _task("a", {"annotations": {KEY: "false"}}),
            _task("b"),
            _task("c", {"annotations": {KEY: "T"}, "labels": {KEY: "0", "app": "x"}}),
        )
    )
    assert (facts["a"], facts["av"]) == (["a", "c"], ["false", "T"])
    assert (facts["l"], facts["lv"]) == (["c"], ["0"])
    # Every task with labels, with all of them (anti-affinity weighs them).
    assert (facts["ln"], facts["lt"]) == (["c"], [{KEY: "0", "app": "x"}])


def test_the_jobs_own_annotation_and_label() -> None:
    facts = manifest_facts(_job(_task("a"), meta={"annotations": {KEY: "false"}, "labels": {KEY: "true"}}))
    assert (facts["ja"], facts["jl"]) == ("false", "true")
    assert "a" not in facts and "l" not in facts


def test_pod_policies_anti_affinity_terms_and_task_priority_classes() -> None:
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM, TERM]}}}
    facts = manifest_facts(
        _job(
            _task("a", spec={"preemptionPolicy": "Never", "priorityClassName": "high"}),
            _task("b", spec=anti),
            _task("c", spec={"preemptionPolicy": "PreemptLowerPriority"}),
        )
    )
    assert facts["pp"] == ["Never", "PreemptLowerPriority"]
    assert facts["anti"] == [TERM, TERM]  # as the path gives them; reading makes them distinct
    assert facts["pcs"] == {"a": "high"}


def test_another_kind_has_no_tasks_but_its_own_flags() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "annotations": {KEY: "true"}},
        "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {}}},
    }
    assert manifest_facts(deployment) == {"api": "apps/v1", "kind": "Deployment", "ja": "true"}


def test_shapes_the_paths_read_leniently() -> None:
    # Lax SQL/JSON paths: a lone task object counts as a one-task array; null values exist.
    lone = {"spec": {"tasks": {"name": "t", "template": {"metadata": {"labels": None}}}}}
    assert manifest_facts(lone) == {"ln": ["t"], "lt": [None]}
    assert manifest_facts({"spec": "x", "metadata": []}) == {}


def test_a_jobs_checkpoint_interval_reaches_its_run() -> None:
    """vglobal.io/checkpoint-interval is taken at submit and read back into the run admission sees."""
    task = {"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    doc = {**JOB, "metadata": {"name": "j", "annotations": {"vglobal.io/checkpoint-interval": "30m"}},
           "spec": {"queue": "default", "tasks": [task]}}  # fmt: skip
    assert manifest_facts(doc)["ck"] == "30m"
    static = static_of(
        new_job(parse_job(doc), None, 0), created_at=datetime.now(UTC), class_policy=None, class_values={}
    )
    facts = facts_of(static, Shared())
    run = admitted_job(facts, Shared(), cluster="c", placements=None, evictions=None, dispatched_at=0.0).running
    assert run is not None and run.checkpoint_interval == 1800.0
    bad = {**doc, "metadata": {"name": "j", "annotations": {"vglobal.io/checkpoint-interval": "often"}}}
    with pytest.raises(ManifestError, match=r"vglobal\.io/checkpoint-interval"):
        parse_job(bad)
