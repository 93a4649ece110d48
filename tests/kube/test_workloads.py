"""Workload objects (RayCluster, RayJob, LeaderWorkerSet, Deployment, StatefulSet, batch/v1 Job):
the agent writes the object with its scheduler on every pod template, the object's controller makes
the pods, the agent binds them as the gang it planned, follows the object's status to the run's end,
and a cancel removes the object and its pods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.kube.harness import Agent, Cluster, cancel
from tests.kube.workload_kit import (
    batch_job,
    deployment,
    gang_job,
    leaderworkerset,
    raycluster,
    rayjob,
    template,
)
from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.workloads import parse_run

PLURALS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "LeaderWorkerSet": "leaderworkersets"}


def start(agent: Agent, uid: str, job: Job) -> None:
    if job.raw["kind"] in PLURALS and job.raw["kind"] not in agent.backend.kinds:
        pytest.skip(f"the cluster does not serve {job.raw['kind']}")
    agent.runtime.controller.start(uid, 1, job, queue="default")


def obj(cluster: Cluster, raw: dict[str, Any]) -> dict[str, Any] | None:
    """The workload object as the cluster holds it (None when gone)."""
    ns, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
    group, _, version = raw["apiVersion"].rpartition("/")
    api = client.CustomObjectsApi(cluster.api_client)
    plural = PLURALS.get(raw["kind"]) or {"Deployment": "deployments", "StatefulSet": "statefulsets"}.get(
        raw["kind"], "jobs"
    )
    try:
        out: dict[str, Any] = api.get_namespaced_custom_object(group, version, ns, plural, name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return None if out["metadata"].get("deletionTimestamp") else out


def run_pods(cluster: Cluster, ns: str, uid: str) -> list[Any]:
    return cluster.live_pods(ns, f"vglobal.io/job-uid={uid}")


def bound_as_planned(agent: Agent, cluster: Cluster, ns: str, uid: str, count: int) -> bool:
    """``count`` pods of the run are on nodes, each on the node the agent planned for its slot."""
    pods = [p for p in run_pods(cluster, ns, uid) if p.spec.node_name]
    slots = agent.backend.workloads.runs[uid].slots.values()
    planned = {s.pod.name: s.bind_to for s in slots if s.pod is not None}
    return len(pods) == count and all(planned.get(p.metadata.name) == p.spec.node_name for p in pods)


def cancel_removes_everything(agent: Agent, cluster: Cluster, raw: dict[str, Any], uid: str) -> None:
    agent.send(cancel(uid, 1))
    agent.until(lambda: agent.finished(uid), 15, "the run to stop")
    assert agent.run(uid).phase == "Aborted"
    ns = raw["metadata"]["namespace"]
    agent.until(
        lambda: obj(cluster, raw) is None and not run_pods(cluster, ns, uid), 20, "object and pods gone"
    )


def test_the_object_is_written_with_the_agents_scheduler_and_the_runs_labels(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    raw = raycluster("rc", ns, workers=2)
    start(agent, "uid-rc", gang_job(raw, [("head", 1, template()), ("workers", 2, template())]))
    got = agent.until(lambda: obj(cluster, raw), 15, "the RayCluster written")
    meta = got["metadata"]
    assert meta["labels"]["vglobal.io/job-uid"] == "uid-rc" and meta["labels"]["vglobal.io/generation"] == "1"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("ConfigMap", "rc-vglobal")
    spec = got["spec"]
    for tmpl in [spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]]:
        assert tmpl["spec"]["schedulerName"] == "vglobal"
        assert tmpl["metadata"]["labels"]["vglobal.io/job-uid"] == "uid-rc"
    assert spec["headGroupSpec"]["template"]["metadata"]["labels"]["vglobal.io/role"] == "head"


def test_a_raycluster_is_bound_as_one_gang_turns_ready_and_cancel_removes_it(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    raw = raycluster("rc", ns, workers=2)
    start(agent, "uid-rc", gang_job(raw, [("head", 1, template()), ("workers", 2, template())]))
    agent.until(lambda: bound_as_planned(agent, cluster, ns, "uid-rc", 3), 30, "head and workers bound")
    agent.until(lambda: agent.run("uid-rc").phase == "Running", 20, "the run Running")
    agent.until(lambda: (obj(cluster, raw) or {}).get("status", {}).get("state") == "ready", 30, "ready")
    agent.until(lambda: any("WorkloadReady" in e for e in agent.events("uid-rc")), 10, "the ready event")
    assert all(p.spec.scheduler_name == "vglobal" for p in run_pods(cluster, ns, "uid-rc"))
    cancel_removes_everything(agent, cluster, raw, "uid-rc")


def test_an_autoscaling_raycluster_starts_at_its_minimum_workers(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    raw = raycluster("auto", ns, workers=4, min_workers=2)
    start(agent, "uid-auto", gang_job(raw, [("head", 1, template()), ("workers", 2, template())]))
    agent.until(lambda: bound_as_planned(agent, cluster, ns, "uid-auto", 3), 30, "head and 2 workers bound")
    agent.until(lambda: agent.run("uid-auto").phase == "Running", 20, "the run Running")
    cancel_removes_everything(agent, cluster, raw, "uid-auto")


def test_a_rayjob_runs_its_cluster_and_submitter_then_completes(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    raw = rayjob("rj", ns, duration="1s")
    tasks = [("head", 1, template()), ("workers", 1, template()), ("submitter", 1, template(restart="Never"))]
    start(agent, "uid-rj", gang_job(raw, tasks))
    run = agent.until(lambda: agent.finished("uid-rj"), 40, "the RayJob to end")
    assert run.phase == "Completed", agent.events("uid-rj")
    assert any("WorkloadSucceeded" in e for e in agent.events("uid-rj"))
    assert (obj(cluster, raw) or {})["status"]["jobStatus"] == "SUCCEEDED"


def test_a_leaderworkerset_places_each_group_whole_and_turns_ready(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    agent = make_agent()
    raw = leaderworkerset("lws", ns, groups=2, size=3)
    start(agent, "uid-lws", gang_job(raw, [("leader", 2, template()), ("worker", 4, template())]))
    agent.until(lambda: bound_as_planned(agent, cluster, ns, "uid-lws", 6), 30, "both groups bound")
    slots = agent.backend.workloads.runs["uid-lws"].slots.values()
    assert sorted((s.role, s.group, s.pod.group) for s in slots if s.pod is not None) == [
        ("leader", 0, 0),
        ("leader", 1, 1),
        ("worker", 0, 0),
        ("worker", 0, 0),
        ("worker", 1, 1),
        ("worker", 1, 1),
    ]
    agent.until(lambda: agent.run("uid-lws").phase == "Running", 20, "the run Running")
    agent.until(
        lambda: (obj(cluster, raw) or {}).get("status", {}).get("readyReplicas") == 2, 30, "groups ready"
    )
    cancel_removes_everything(agent, cluster, raw, "uid-lws")


def test_a_group_that_cannot_fit_is_not_started_partly(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    # 4 nodes x 8 cpu hold four 7-cpu pods: two groups of three cannot start, so nothing is bound
    raw = leaderworkerset("big", ns, groups=2, size=3, cpu="7")
    big = template(cpu="7")
    start(agent, "uid-big", gang_job(raw, [("leader", 2, big), ("worker", 4, big)]))
    agent.until(lambda: len(run_pods(cluster, ns, "uid-big")) == 6, 20, "the six pods made")
    agent.until(lambda: agent.run("uid-big").message, 10, "a reason why the gang waits")
    for _ in range(10):
        agent.step()
    assert emulator.counts().get("create pods/binding", 0) == 0
    assert all(p.spec.node_name is None for p in run_pods(cluster, ns, "uid-big"))


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
def test_a_gang_deployment_or_statefulset_runs_until_cancelled(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, kind: str
) -> None:
    agent = make_agent()
    raw = deployment("web", ns, kind, replicas=2)
    start(agent, "uid-web", gang_job(raw, [("main", 2, template())]))
    agent.until(lambda: bound_as_planned(agent, cluster, ns, "uid-web", 2), 30, "both pods bound")
    agent.until(lambda: any("WorkloadReady" in e for e in agent.events("uid-web")), 30, "ready")
    assert agent.run("uid-web").phase == "Running"
    cancel_removes_everything(agent, cluster, raw, "uid-web")


def test_a_batch_job_runs_to_completion(make_agent: Callable[..., Agent], cluster: Cluster, ns: str) -> None:
    agent = make_agent()
    raw = batch_job("once", ns, parallelism=2, duration="1s")
    start(agent, "uid-once", gang_job(raw, [("main", 2, template(duration="1s", restart="Never"))]))
    run = agent.until(lambda: agent.finished("uid-once"), 40, "the Job to end")
    assert run.phase == "Completed", agent.events("uid-once")


def test_the_agent_says_which_kinds_the_cluster_lacks_and_refuses_them(
    make_agent: Callable[..., Agent], emulator: Any, ns: str
) -> None:
    emulator.set_crd("leaderworkersets.leaderworkerset.x-k8s.io", False)
    agent = make_agent()
    labels = agent.backend.cluster_labels
    assert labels["workloads.vglobal.io/leaderworkersets.leaderworkerset.x-k8s.io"] == "missing"
    assert labels["workloads.vglobal.io/rayclusters.ray.io"] == "served"
    assert labels["workloads.vglobal.io/deployments.apps"] == "served"
    raw = leaderworkerset("lws", ns, groups=1, size=2)
    with pytest.raises(ValueError, match=r"does not serve LeaderWorkerSet.*LeaderWorkerSet controller"):
        agent.runtime.controller.start(
            "uid-lws", 1, gang_job(raw, [("leader", 1, template()), ("worker", 1, template())])
        )
    assert "uid-lws" not in agent.runtime.runs


def read_back(raw: dict[str, Any]) -> None:
    """A restarted agent reads a run's manifest back from its owner with the model's parse_run."""
    try:
        parse_run(raw)
    except ManifestError as exc:
        pytest.skip(f"the model does not parse {raw['kind']}: {exc}")


def test_an_agent_that_restarts_takes_over_the_workload_object_and_its_pods_as_they_are(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    raw = raycluster("rc", ns, workers=1)
    read_back(raw)
    first = make_agent()
    start(first, "uid-rc", gang_job(raw, [("head", 1, template()), ("workers", 1, template())]))
    first.until(lambda: bound_as_planned(first, cluster, ns, "uid-rc", 2), 30, "head and worker bound")
    first.until(lambda: first.run("uid-rc").phase == "Running", 20, "the run Running")
    before = (
        (obj(cluster, raw) or {})["metadata"]["uid"],
        {p.metadata.uid for p in run_pods(cluster, ns, "uid-rc")},
    )
    first.abandon()  # as a kill -9: nothing is cleaned up

    second = make_agent()
    assert second.recover() == ["uid-rc"]
    run = second.until(lambda: (r := second.run("uid-rc")).phase == "Running" and r, 20, "Running again")
    assert run.generation == 1 and any(e.startswith("Recovered") for e in second.events("uid-rc"))
    slots = second.backend.workloads.runs["uid-rc"].slots.values()
    assert {s.pod.uid for s in slots if s.pod is not None} == before[1], "the pods found fill its slots"
    assert not second.backend.workloads.pending_binds()
    assert (
        (obj(cluster, raw) or {})["metadata"]["uid"],
        {p.metadata.uid for p in run_pods(cluster, ns, "uid-rc")},
    ) == before
    cancel_removes_everything(second, cluster, raw, "uid-rc")


def test_an_agent_that_restarts_deletes_the_object_of_an_older_generation(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str
) -> None:
    raw = deployment("web", ns, replicas=1)
    read_back(raw)
    first = make_agent()
    start(first, "uid-web", gang_job(raw, [("main", 1, template())]))
    first.until(lambda: bound_as_planned(first, cluster, ns, "uid-web", 1), 30, "its pod bound")
    # a second run made to look like an older generation of the same job (moved off and back)
    other = ns + "-b"
    cluster.create_namespace(other)
    try:
        old = deployment("web", other, replicas=1)
        start(first, "uid-old", gang_job(old, [("main", 1, template())]))
        first.until(lambda: bound_as_planned(first, cluster, other, "uid-old", 1), 30, "the other pod bound")
        first.abandon()
        client.AppsV1Api(cluster.api_client).patch_namespaced_deployment(
            "web",
            other,
            {"metadata": {"labels": {"vglobal.io/job-uid": "uid-web", "vglobal.io/generation": "0"}}},
        )
        second = make_agent()
        assert second.recover() == ["uid-web"]
        second.until(lambda: obj(cluster, old) is None, 20, "the older generation's Deployment deleted")
        assert obj(cluster, raw) is not None
    finally:
        cluster.delete_namespace(other)
