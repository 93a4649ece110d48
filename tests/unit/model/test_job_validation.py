"""Volcano Job manifests: every validation rule, each error naming its exact field path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.model.job_docs import container, parse, pod, spec, task
from vglobal.model.errors import ManifestError

# ---------------------------------------------------------------- validation: exact field paths

C0 = "spec.tasks[0].template.spec.containers[0]"


def set_spec(**kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: spec(doc).update(kw)


def set_task(i: int, **kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: task(doc, i).update(kw)


def set_resources(**kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: pod(doc, 0)["containers"][0]["resources"].update(kw)


def set_annotation(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["metadata"].update(annotations={key: value})


LONG = "x" * 60

CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("no name", lambda d: d["metadata"].pop("name"), "metadata.name", "required"),
    ("bad name", lambda d: d["metadata"].update(name="Train_1"), "metadata.name", 'invalid name "Train_1"'),
    ("name too long", lambda d: d["metadata"].update(name="a" * 64), "metadata.name", "at most 63"),
    (
        "bad namespace",
        lambda d: d["metadata"].update(namespace="Team A"),
        "metadata.namespace",
        "invalid name",
    ),
    (
        "label not text",
        lambda d: d["metadata"].update(labels={"gpus": 8}),
        "metadata.labels.gpus",
        "must be a string",
    ),
    ("no tasks", set_spec(tasks=[]), "spec.tasks", "at least one task is required"),
    ("tasks not a list", set_spec(tasks={"name": "x"}), "spec.tasks", "must be a list"),
    ("duplicate task", set_task(1, name="ps"), "spec.tasks[1].name", 'duplicate task name "ps"'),
    ("bad task name", set_task(1, name="Worker"), "spec.tasks[1].name", 'invalid name "Worker"'),
    ("pod name too long", lambda d: d["metadata"].update(name=LONG), "spec.tasks[0].name", "longer than 63"),
    ("negative replicas", set_task(1, replicas=-1), "spec.tasks[1].replicas", "must be >= 0"),
    ("replicas as text", set_task(1, replicas="3"), "spec.tasks[1].replicas", "must be an integer"),
    ("task min above replicas", set_task(1, minAvailable=7), "spec.tasks[1].minAvailable", "more than the 6"),
    ("negative task min", set_task(1, minAvailable=-1), "spec.tasks[1].minAvailable", "must be >= 0"),
    ("negative task maxRetry", set_task(0, maxRetry=-1), "spec.tasks[0].maxRetry", "must be >= 0"),
    (
        "job min above pods",
        set_spec(minAvailable=9),
        "spec.minAvailable",
        "minAvailable 9 is more than the 8 pods of the job",
    ),
    ("negative job min", set_spec(minAvailable=-1), "spec.minAvailable", "must be >= 0"),
    ("negative maxRetry", set_spec(maxRetry=-1), "spec.maxRetry", "must be >= 0"),
    ("minSuccess zero", set_spec(minSuccess=0), "spec.minSuccess", "between 1 and the 8 pods"),
    ("minSuccess above pods", set_spec(minSuccess=9), "spec.minSuccess", "between 1 and the 8 pods"),
    ("bad queue name", set_spec(queue="ML Team"), "spec.queue", "invalid name"),
    ("bad priority class", set_spec(priorityClassName="High!"), "spec.priorityClassName", "invalid name"),
    (
        "no containers",
        lambda d: pod(d, 0).update(containers=[]),
        "spec.tasks[0].template.spec.containers",
        "at least one",
    ),
    (
        "no template",
        lambda d: task(d, 0).pop("template"),
        "spec.tasks[0].template.spec.containers",
        "at least one",
    ),
    (
        "bad cpu",
        set_resources(requests={"cpu": "abc"}),
        f"{C0}.resources.requests.cpu",
        'invalid quantity "abc"',
    ),
    (
        "bad gpu",
        set_resources(requests={"nvidia.com/gpu": "one"}),
        f"{C0}.resources.requests[nvidia.com/gpu]",
        'invalid quantity "one"',
    ),
    ("negative limit", set_resources(limits={"memory": "-1Gi"}), f"{C0}.resources.limits.memory", "negative"),
    (
        "request above limit",
        set_resources(requests={"cpu": "2"}, limits={"cpu": "1"}),
        f"{C0}.resources.requests.cpu",
        "less than or equal to cpu limit of 1",
    ),
    (
        "bad init container quantity",
        lambda d: pod(d, 1).update(initContainers=[container({"memory": "1Gib"})]),
        "spec.tasks[1].template.spec.initContainers[0].resources.requests.memory",
        'invalid quantity "1Gib"',
    ),
    (
        "event and exitCode",
        set_spec(policies=[{"event": "PodFailed", "exitCode": 2, "action": "AbortJob"}]),
        "spec.policies[0]",
        "must not specify event and exitCode",
    ),
    ("neither", set_spec(policies=[{"action": "AbortJob"}]), "spec.policies[0]", "either event or exitCode"),
    (
        "unknown event",
        set_spec(policies=[{"event": "PodExploded", "action": "AbortJob"}]),
        "spec.policies[0].event",
        'invalid policy event "PodExploded"',
    ),
    (
        "unknown event in list",
        set_spec(policies=[{"events": ["PodFailed", "Nope"], "action": "AbortJob"}]),
        "spec.policies[0].events[1]",
        'invalid policy event "Nope"',
    ),
    (
        "internal event",
        set_spec(policies=[{"event": "OutOfSync", "action": "AbortJob"}]),
        "spec.policies[0].event",
        "raised by Volcano itself",
    ),
    (
        "unknown action",
        set_spec(policies=[{"event": "PodFailed", "action": "Explode"}]),
        "spec.policies[0].action",
        'invalid policy action "Explode"',
    ),
    (
        "internal action",
        set_spec(policies=[{"event": "PodFailed", "action": "SyncJob"}]),
        "spec.policies[0].action",
        "used by Volcano itself",
    ),
    ("missing action", set_spec(policies=[{"event": "PodFailed"}]), "spec.policies[0].action", "required"),
    (
        "exit code 0",
        set_spec(policies=[{"exitCode": 0, "action": "AbortJob"}]),
        "spec.policies[0].exitCode",
        "0 is not",
    ),
    (
        "duplicate exit code",
        set_spec(policies=[{"exitCode": 2, "action": "AbortJob"}, {"exitCode": 2, "action": "RestartJob"}]),
        "spec.policies[1].exitCode",
        "duplicate exitCode 2",
    ),
    (
        "bad timeout",
        set_spec(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "5x"}]),
        "spec.policies[0].timeout",
        'invalid duration "5x"',
    ),
    (
        "duplicate event",
        set_spec(
            policies=[
                {"event": "PodFailed", "action": "AbortJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ]
        ),
        "spec.policies[1].event",
        'duplicate event "PodFailed"',
    ),
    (
        "star with others",
        set_spec(
            policies=[{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}]
        ),
        "spec.policies",
        '"*"',
    ),
    (
        "bad task policy",
        set_task(1, policies=[{"event": "TaskCompleted", "action": "Finish"}]),
        "spec.tasks[1].policies[0].action",
        'invalid policy action "Finish"',
    ),
    (
        "bad mode",
        set_spec(networkTopology={"mode": "strict"}),
        "spec.networkTopology.mode",
        '"hard" or "soft"',
    ),
    (
        "both tiers",
        set_spec(networkTopology={"highestTierAllowed": 1, "highestTierName": "spine"}),
        "spec.networkTopology",
        "must not both be set",
    ),
    (
        "negative tier",
        set_spec(networkTopology={"highestTierAllowed": -1}),
        "spec.networkTopology.highestTierAllowed",
        "must be >= 0",
    ),
    (
        "unknown plugin",
        set_spec(plugins={"teleport": []}),
        "spec.plugins.teleport",
        'unknown job plugin "teleport"',
    ),
    (
        "bad cluster list",
        set_annotation("vglobal.io/clusters", "gpu-east,GPU West"),
        "metadata.annotations[vglobal.io/clusters]",
        'invalid name "GPU West"',
    ),
    (
        "bad selector",
        set_annotation("vglobal.io/cluster-selector", "region=eu,gpu"),
        "metadata.annotations[vglobal.io/cluster-selector]",
        '"gpu" is not a label requirement',
    ),
    (
        "bad sim duration",
        lambda d: task(d, 0)["template"].update(
            metadata={"annotations": {"vglobal.io/sim-duration": "soon"}}
        ),
        "spec.tasks[0].template.metadata.annotations[vglobal.io/sim-duration]",
        'invalid duration "soon"',
    ),
]


@pytest.mark.parametrize(("mutate", "field", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_names_the_field(
    mutate: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    with pytest.raises(ManifestError) as info:
        parse(mutate)
    err = info.value
    assert err.field == field, err.problems
    assert message in err.message, err.problems
    assert str(err).startswith(f"{field}: ")


def test_invalid_quantity_error_text_is_exact() -> None:
    with pytest.raises(ManifestError) as info:
        parse(set_resources(requests={"cpu": "abc"}))
    assert str(info.value) == f'{C0}.resources.requests.cpu: invalid quantity "abc"'


def test_all_problems_are_reported_first_one_as_field() -> None:
    def m(doc: dict[str, Any]) -> None:
        task(doc, 0)["replicas"] = -2
        spec(doc)["maxRetry"] = -1

    with pytest.raises(ManifestError) as info:
        parse(m)
    err = info.value
    assert err.problems == (("spec.tasks[0].replicas", "must be >= 0"), ("spec.maxRetry", "must be >= 0"))
    assert str(err) == "spec.tasks[0].replicas: must be >= 0; spec.maxRetry: must be >= 0"


def test_valid_policies_and_a_long_but_legal_job_name_pass() -> None:
    def m(doc: dict[str, Any]) -> None:
        doc["metadata"]["name"] = "a" * 50  # a-...-worker-5 is 59 characters
        spec(doc)["policies"] = [{"event": "*", "action": "RestartJob"}]
        task(doc, 1)["policies"] = [{"exitCode": 137, "action": "RestartPod"}]

    job = parse(m)
    assert job.policies[0].events == ("*",)
    assert copy.deepcopy(job.raw) == job.raw
