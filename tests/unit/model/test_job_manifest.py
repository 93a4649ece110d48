"""Volcano Job manifests: Volcano's webhook defaults, requests, gangs, and every validation rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vglobal.model.errors import ManifestError
from vglobal.model.job import Job, parse_job
from vglobal.model.manifests import parse_manifests
from vglobal.model.resources import ResourceVector

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"


def rv(q: dict[str, str]) -> ResourceVector:
    return ResourceVector.from_quantities(q)


def container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "main", "image": "busybox", "resources": resources}


def base_doc() -> dict[str, Any]:
    """A two-task job of 8 pods: 2 ps (1 cpu) and 6 workers (2 cpu, 1 GPU)."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {
            "tasks": [
                {
                    "name": "ps",
                    "replicas": 2,
                    "template": {"spec": {"containers": [container({"cpu": "1", "memory": "2Gi"})]}},
                },
                {
                    "name": "worker",
                    "replicas": 6,
                    "template": {
                        "spec": {"containers": [container({"cpu": "2"}, {"cpu": "2", "nvidia.com/gpu": "1"})]}
                    },
                },
            ]
        },
    }


def parse(mutate: Callable[[dict[str, Any]], None] | None = None) -> Job:
    doc = base_doc()
    if mutate:
        mutate(doc)
    return parse_job(doc)


def spec(doc: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = doc["spec"]
    return s


def task(doc: dict[str, Any], i: int) -> dict[str, Any]:
    t: dict[str, Any] = doc["spec"]["tasks"][i]
    return t


def pod(doc: dict[str, Any], i: int) -> dict[str, Any]:
    p: dict[str, Any] = doc["spec"]["tasks"][i]["template"]["spec"]
    return p


# ---------------------------------------------------------------- defaults and derived values


def test_volcano_webhook_defaults() -> None:
    job = parse()
    assert job.queue == "default"
    assert job.max_retry == 3
    assert job.scheduler_name == "volcano"
    assert [t.min_available for t in job.tasks] == [2, 6]  # task.minAvailable = replicas
    assert job.min_available == 8  # Σ task.minAvailable
    assert job.namespace == "team-a"
    assert job.key == "team-a/train"


def test_explicit_zero_min_available_and_max_retry_are_defaulted_like_volcano() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc).update(minAvailable=0, maxRetry=0)
        task(doc, 1)["minAvailable"] = 3

    job = parse(m)
    assert job.min_available == 2 + 3
    assert job.max_retry == 3


def test_missing_namespace_is_default_and_unnamed_task_is_named_by_index() -> None:
    def m(doc: dict[str, Any]) -> None:
        del doc["metadata"]["namespace"]
        del task(doc, 1)["name"]

    job = parse(m)
    assert job.namespace == "default"
    assert [t.name for t in job.tasks] == ["ps", "default1"]


def test_raw_is_the_manifest_as_submitted_and_independent_of_the_input() -> None:
    doc = base_doc()
    doc["spec"]["someFieldWeDoNotModel"] = {"x": 1}
    job = parse_job(doc)
    assert job.raw == doc
    assert "minAvailable" not in job.raw["spec"]  # no defaults written into it
    doc["spec"]["tasks"][0]["replicas"] = 99
    assert job.raw["spec"]["tasks"][0]["replicas"] == 2
    assert job.tasks[0].template == base_doc()["spec"]["tasks"][0]["template"]


def test_pod_request_uses_limits_where_requests_are_absent() -> None:
    job = parse()
    assert job.tasks[0].pod_request == rv({"cpu": "1", "memory": "2Gi"})
    assert job.tasks[1].pod_request == rv({"cpu": "2", "nvidia.com/gpu": "1"})


def test_pod_request_sums_containers_and_keeps_an_explicit_zero_request() -> None:
    def m(doc: dict[str, Any]) -> None:
        pod(doc, 0)["containers"] = [
            container({"cpu": "1"}),
            container({"cpu": "500m", "memory": "0"}, {"memory": "1Gi"}),
        ]

    assert parse(m).tasks[0].pod_request == rv({"cpu": "1500m"})


def test_init_containers_count_as_the_larger_of_init_peak_and_containers() -> None:
    def m(doc: dict[str, Any]) -> None:
        pod(doc, 0)["containers"] = [container({"cpu": "1", "memory": "1Gi"})]
        pod(doc, 0)["initContainers"] = [container({"cpu": "3"}), container({"memory": "512Mi"})]

    assert parse(m).tasks[0].pod_request == rv({"cpu": "3", "memory": "1Gi"})


def test_sidecars_and_overhead_add_to_the_pod_request() -> None:
    def m(doc: dict[str, Any]) -> None:
        sidecar = container({"cpu": "250m"}) | {"restartPolicy": "Always"}
        pod(doc, 0)["containers"] = [container({"cpu": "1"})]
        pod(doc, 0)["initContainers"] = [sidecar, container({"cpu": "2"})]
        pod(doc, 0)["overhead"] = {"cpu": "100m"}

    # max(1 + 0.25 sidecar, 2 init + 0.25 sidecar) + 0.1 overhead
    assert parse(m).tasks[0].pod_request == rv({"cpu": "2350m"})


def test_total_request_counts_every_task() -> None:
    job = parse()
    assert job.total_pods() == 8
    assert job.total_request() == rv({"cpu": "14", "memory": "4Gi", "nvidia.com/gpu": "6"})


def test_gang_is_each_tasks_min_available() -> None:
    def m(doc: dict[str, Any]) -> None:
        task(doc, 0)["minAvailable"] = 1
        task(doc, 1)["minAvailable"] = 4

    job = parse(m)
    assert job.min_available == 5
    assert [(name, n) for name, _, n in job.gang()] == [("ps", 1), ("worker", 4)]
    assert job.gang_request() == rv({"cpu": "9", "memory": "2Gi", "nvidia.com/gpu": "4"})


def test_gang_smaller_than_task_minimums_is_taken_in_task_order() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc)["minAvailable"] = 3

    job = parse(m)
    assert [(name, n) for name, _, n in job.gang()] == [("ps", 2), ("worker", 1)]
    assert job.gang_request() == rv({"cpu": "4", "memory": "4Gi", "nvidia.com/gpu": "1"})


def test_gang_larger_than_task_minimums_adds_replicas_in_task_order() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc)["minAvailable"] = 6
        task(doc, 0)["minAvailable"] = 0
        task(doc, 1)["minAvailable"] = 2

    job = parse(m)
    assert [(name, n) for name, _, n in job.gang()] == [("ps", 2), ("worker", 4)]


def test_placement_annotations() -> None:
    def m(doc: dict[str, Any]) -> None:
        doc["metadata"]["annotations"] = {
            "vglobal.io/clusters": "gpu-east, gpu-west",
            "vglobal.io/cluster-selector": "region=eu,gpu=h100",
        }

    job = parse(m)
    assert job.allowed_clusters == frozenset({"gpu-east", "gpu-west"})
    assert job.cluster_selector == {"region": "eu", "gpu": "h100"}
    plain = parse()
    assert plain.allowed_clusters is None
    assert plain.cluster_selector == {}


def test_policies_network_topology_plugins_and_priority() -> None:
    def m(doc: dict[str, Any]) -> None:
        spec(doc).update(
            priorityClassName="high",
            minSuccess=6,
            policies=[{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob", "timeout": "5m"}],
            networkTopology={"mode": "soft", "highestTierName": "spine"},
            plugins={"mpi": ["--port=2222"]},
        )
        task(doc, 1)["policies"] = [{"exitCode": 3, "action": "RestartTask"}]
        pod(doc, 1)["priorityClassName"] = "low"

    job = parse(m)
    assert job.priority_class_name == "high"
    assert job.min_success == 6
    assert job.policies[0].events == ("PodEvicted", "PodFailed")
    assert job.policies[0].timeout_seconds == 300
    assert job.tasks[1].policies[0].exit_code == 3
    assert job.tasks[1].priority_class_name == "low"
    assert job.network_topology is not None
    assert (job.network_topology.mode, job.network_topology.highest_tier_name) == ("soft", "spine")
    # Volcano adds the svc and ssh plugins mpi depends on.
    assert job.plugins == {"mpi": ("--port=2222",), "svc": (), "ssh": ()}


# ---------------------------------------------------------------- the Volcano docs examples


def test_volcano_ray_job() -> None:
    [job] = parse_manifests((FIXTURES / "volcano-ray-cluster.yaml").read_text())
    assert isinstance(job, Job)
    assert job.min_available == 3
    assert [(name, n) for name, _, n in job.gang()] == [("head", 1), ("worker", 2)]
    assert job.total_request() == ResourceVector()  # the example requests nothing
    assert job.plugins == {"ray": (), "svc": ()}
    assert job.policies[0].events == ("PodEvicted",) and job.policies[0].action == "RestartJob"


def test_volcano_network_topology_job() -> None:
    [job] = parse_manifests((FIXTURES / "volcano-network-topology.yaml").read_text())
    assert isinstance(job, Job)
    assert job.network_topology is not None
    assert (job.network_topology.mode, job.network_topology.highest_tier_allowed) == ("hard", 2)
    assert job.gang() == (("pod", rv({"cpu": "1"}), 3),)
    assert job.gang_request() == rv({"cpu": "3"})


def test_volcano_tensorflow_ps_worker_job() -> None:
    [job] = parse_manifests((FIXTURES / "volcano-tf-ps-worker.yaml").read_text())
    assert isinstance(job, Job)
    assert job.min_available == 3
    assert job.tasks[1].policies[0].action == "CompleteJob"
    # the worker's GPU comes from its limit, as Kubernetes defaults a missing request
    assert job.total_request() == rv({"cpu": "4500m", "memory": "9Gi", "nvidia.com/gpu": "2"})
    assert job.gang_request() == job.total_request()


def test_repository_examples_and_clusters_parse() -> None:
    root = Path(__file__).resolve().parents[3]
    files = sorted((root / "examples").glob("*.yaml")) + sorted((root / "clusters").glob("*.yaml"))
    assert files
    for f in files:
        assert parse_manifests(f.read_text()), f


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
