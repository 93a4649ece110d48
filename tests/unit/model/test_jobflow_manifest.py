"""JobTemplate and JobFlow manifests: the DAG, its targets and probes, templates, the flows' Jobs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.model.jobflow_docs import DIAMOND
from vglobal.model.errors import ManifestError
from vglobal.model.job import parse_job
from vglobal.model.jobflow import (
    CREATED_BY_FLOW,
    CREATED_BY_TEMPLATE,
    JobFlow,
    JobTemplate,
    RetainPolicy,
    TaskStatusCheck,
    check_flow_templates,
    flow_job,
    parse_job_flow,
    parse_job_template,
)
from vglobal.model.manifests import parse_manifests

API = "flow.volcano.sh/v1alpha1"


def job_spec(task: str = "main") -> dict[str, Any]:
    return {
        "queue": "research",
        "tasks": [
            {
                "name": task,
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}},
            }
        ],
    }


def template(name: str, task: str = "main") -> JobTemplate:
    return parse_job_template(
        {"apiVersion": API, "kind": "JobTemplate", "metadata": {"name": name}, "spec": job_spec(task)}
    )


TEMPLATES = {n: template(n) for n in "abcd"}


def flows_problems(change: Callable[[list[dict[str, Any]]], None]) -> list[tuple[str, str]]:
    doc = copy.deepcopy(DIAMOND)
    change(doc["spec"]["flows"])
    with pytest.raises(ManifestError) as info:
        parse_job_flow(doc)
    return list(info.value.problems)


# ---------------------------------------------------------------- JobTemplate


def test_a_template_holds_a_job_spec() -> None:
    t = template("train", task="worker")
    assert (t.name, t.namespace, t.task_names) == ("train", "default", ("worker",))
    assert t.job_spec == job_spec("worker")


def test_a_template_is_refused_as_a_job_is_at_the_same_paths() -> None:
    spec = job_spec()
    spec["tasks"][0]["replicas"] = -1
    spec["maxRetry"] = -1
    with pytest.raises(ManifestError) as as_job:
        parse_job(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": "t"},
                "spec": spec,
            }
        )
    with pytest.raises(ManifestError) as as_template:
        parse_job_template(
            {"apiVersion": API, "kind": "JobTemplate", "metadata": {"name": "t"}, "spec": spec}
        )
    assert as_template.value.problems == as_job.value.problems
    with pytest.raises(ManifestError, match=r"metadata.name: invalid name"):
        parse_job_template(
            {"apiVersion": API, "kind": "JobTemplate", "metadata": {"name": "T"}, "spec": job_spec()}
        )


# ---------------------------------------------------------------- JobFlow


def test_the_diamond_parses_with_volcanos_defaults() -> None:
    flow = parse_job_flow(DIAMOND)
    assert [f.name for f in flow.flows] == ["a", "b", "c", "d"]
    assert [f.depends_on for f in flow.flows] == [(), ("a",), ("a",), ("b", "c")]
    assert flow.job_retain_policy == RetainPolicy.retain and flow.namespace == "ns"
    assert flow.job_name("d") == "flow-d"
    check_flow_templates(flow, TEMPLATES)


def drop_a(flows: list[dict[str, Any]]) -> None:
    del flows[0]


def add_cycle(flows: list[dict[str, Any]]) -> None:
    flows[0]["dependsOn"] = {"targets": ["d"]}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (drop_a, "spec.flows[0].dependsOn.targets[0]", 'unknown flow "a" (flows: b, c, d)'),
        (add_cycle, "spec.flows[1].dependsOn.targets", "dependency cycle: a -> d -> b -> a"),
        (
            lambda f: f[1]["dependsOn"].update(targets=["b"]),
            "spec.flows[1].dependsOn.targets",
            "cycle: b -> b",
        ),
        (lambda f: f.append({"name": "a"}), "spec.flows[4].name", 'duplicate flow "a"'),
        (lambda f: f.append({"name": ""}), "spec.flows[4].name", "required"),
        (lambda f: f.append({"name": "Big"}), "spec.flows[4].name", "DNS-1123 label"),
        (lambda f: f.append({"name": "x" * 60}), "spec.flows[4].name", "longer than 63 characters"),
        (lambda f: f.clear(), "spec.flows", "at least one flow is required"),
        (lambda f: f[0].update(patch={"jobSpec": {}}), "spec.flows[0].patch", "not supported"),
        (
            lambda f: f[1]["dependsOn"].update(probe={"httpGetList": [{"taskName": "main", "port": 80}]}),
            "spec.flows[1].dependsOn.probe.httpGetList",
            "not supported",
        ),
        (
            lambda f: f[1]["dependsOn"].update(
                probe={"taskStatusList": [{"taskName": "main", "phase": "Done"}]}
            ),
            "spec.flows[1].dependsOn.probe.taskStatusList[0].phase",
            "Pending, Running, Succeeded, Failed",
        ),
        (
            lambda f: f[0].update(
                dependsOn={"probe": {"taskStatusList": [{"taskName": "main", "phase": "Running"}]}}
            ),
            "spec.flows[0].dependsOn.probe.taskStatusList",
            "needs dependsOn.targets",
        ),
        (
            lambda f: f[1]["dependsOn"].update(targets="a"),
            "spec.flows[1].dependsOn.targets",
            "must be a list",
        ),
    ],
)
def test_refusals_name_the_flow_and_field(
    change: Callable[[list[dict[str, Any]]], None], field: str, words: str
) -> None:
    found = flows_problems(change)
    assert any(f == field and words in m for f, m in found), found


def test_retain_policy() -> None:
    doc = copy.deepcopy(DIAMOND)
    doc["spec"]["jobRetainPolicy"] = "delete"
    assert parse_job_flow(doc).job_retain_policy == RetainPolicy.delete
    doc["spec"]["jobRetainPolicy"] = "keep"
    with pytest.raises(
        ManifestError, match=r'spec.jobRetainPolicy: must be "retain" or "delete", not "keep"'
    ):
        parse_job_flow(doc)


def test_a_long_chain_is_checked_without_deep_recursion() -> None:
    doc = copy.deepcopy(DIAMOND)
    doc["spec"]["flows"] = [{"name": "f0"}] + [
        {"name": f"f{i}", "dependsOn": {"targets": [f"f{i - 1}"]}} for i in range(1, 3000)
    ]
    assert len(parse_job_flow(doc).flows) == 3000
    doc["spec"]["flows"][0]["dependsOn"] = {"targets": ["f2999"]}
    with pytest.raises(ManifestError) as info:
        parse_job_flow(doc)
    assert info.value.problems == (
        (
            "spec.flows[1].dependsOn.targets",
            "dependency cycle: f0 -> f2999 -> f2998 -> f2997 -> ... -> f2 -> f1 -> f0 (3000 flows)",
        ),
    )


def test_probes_are_read() -> None:
    doc = copy.deepcopy(DIAMOND)
    probe = {"taskStatusList": [{"taskName": "main", "phase": "Running"}]}
    doc["spec"]["flows"][1]["dependsOn"]["probe"] = probe
    flow = parse_job_flow(doc)
    assert flow.flows[1].probe == (TaskStatusCheck(task_name="main", phase="Running"),)
    check_flow_templates(flow, TEMPLATES)
    with pytest.raises(ManifestError) as info:
        check_flow_templates(flow, {**TEMPLATES, "a": template("a", task="other")})
    assert info.value.problems == (
        (
            "spec.flows[1].dependsOn.probe.taskStatusList[0].taskName",
            'no task "main" in the JobTemplates of a',
        ),
    )


def test_templates_must_exist_and_make_valid_jobs() -> None:
    flow = parse_job_flow(DIAMOND)
    with pytest.raises(ManifestError) as info:
        check_flow_templates(flow, {"a": TEMPLATES["a"], "b": TEMPLATES["b"]})
    assert [f for f, _ in info.value.problems] == ["spec.flows[2].name", "spec.flows[3].name"]
    assert 'JobTemplate "c" not found in namespace "ns"' in info.value.problems[0][1]
    # A task name that fits the template alone but not the flow's longer Job name.
    long_task = template("d", task="t" * 55)
    with pytest.raises(ManifestError) as info:
        check_flow_templates(flow, {**TEMPLATES, "d": long_task})
    [(field, message)] = info.value.problems
    assert field == "spec.flows[3].name" and 'the Job "flow-d" would be invalid' in message


def test_a_flows_job_is_its_template_named_and_marked() -> None:
    made = flow_job(parse_job_flow(DIAMOND), "b", TEMPLATES["b"])
    assert (made.name, made.namespace, made.queue) == ("flow-b", "ns", "research")
    assert made.labels == {CREATED_BY_TEMPLATE: "ns.b", CREATED_BY_FLOW: "ns.flow"}
    assert made.annotations == made.labels
    [owner] = made.raw["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == (API, "JobFlow", "flow")


def test_templates_and_flows_come_through_the_manifest_entry_point() -> None:
    import yaml

    docs = [
        {"apiVersion": API, "kind": "JobTemplate", "metadata": {"name": n}, "spec": job_spec()}
        for n in "abcd"
    ]
    parsed = parse_manifests(yaml.safe_dump_all([*docs, DIAMOND]))
    assert [type(m) for m in parsed] == [JobTemplate] * 4 + [JobFlow]
    bad = copy.deepcopy(DIAMOND)
    bad["spec"]["flows"][0]["dependsOn"] = {"targets": ["zz"]}
    with pytest.raises(ManifestError) as info:
        parse_manifests(yaml.safe_dump_all([*docs, bad]))
    assert str(info.value).startswith(
        'document[4] (JobFlow "flow"): spec.flows[0].dependsOn.targets[0]: unknown flow'
    )
