"""Job plugins as seen in the pod objects the controller hands to the backend."""

from __future__ import annotations

from typing import Any

from vglobal.agent.pods import PodManifest


def pod_objects(sim: Any) -> dict[str, dict[str, Any]]:
    run = sim.runtime.runs["uid-1"]
    return {name: pod.obj for name, pod in run.pods.items()}


def env_of(obj: dict[str, Any], container: int = 0) -> dict[str, str]:
    return {e["name"]: e["value"] for e in obj["spec"]["containers"][container].get("env", [])}


def test_env_plugin_sets_the_task_index(sim: Any, jobs: Any) -> None:
    sim.start(jobs.job(jobs.task("w", 3), plugins={"env": []}))
    objs = pod_objects(sim)
    assert [env_of(objs[f"job-w-{i}"])["VC_TASK_INDEX"] for i in range(3)] == ["0", "1", "2"]
    assert env_of(objs["job-w-2"])["VK_TASK_INDEX"] == "2"


def test_no_plugin_no_env(sim: Any, jobs: Any) -> None:
    sim.start(jobs.job(jobs.task("w", 1)))
    assert "VC_TASK_INDEX" not in env_of(pod_objects(sim)["job-w-0"])


def test_svc_plugin_hostnames_env_and_headless_service(sim: Any, jobs: Any) -> None:
    run = sim.start(jobs.job(jobs.task("ps", 1), jobs.task("worker", 2), plugins={"svc": []}))
    obj = pod_objects(sim)["job-worker-1"]
    assert obj["spec"]["hostname"] == "job-worker-1"
    assert obj["spec"]["subdomain"] == "job"
    env = env_of(obj)
    assert env["VC_WORKER_HOSTS"] == "job-worker-0.job,job-worker-1.job"
    assert env["VC_PS_HOSTS"] == "job-ps-0.job"
    assert env["VC_WORKER_NUM"] == "2"
    service = next(o for o in run.objects if o["kind"] == "Service")
    assert service["metadata"]["name"] == "job" and service["spec"]["clusterIP"] == "None"
    config = next(o for o in run.objects if o["kind"] == "ConfigMap")
    assert config["data"]["worker.host"] == "job-worker-0.job\njob-worker-1.job"
    mounts = obj["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "job-svc", "mountPath": "/etc/volcano"} in mounts


def test_ray_plugin_head_and_worker(sim: Any, jobs: Any) -> None:
    run = sim.start(jobs.job(jobs.task("head", 1), jobs.task("worker", 2), plugins={"ray": [], "svc": []}))
    objs = pod_objects(sim)
    head = objs["job-head-0"]["spec"]["containers"][0]
    assert {p["containerPort"] for p in head["ports"]} == {6379, 8265, 10001}
    assert "ray start --head" in head["command"][-1] and "--port=6379" in head["command"][-1]
    worker = objs["job-worker-0"]["spec"]["containers"][0]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=job-head-0.job:6379"]
    ray_service = [o for o in run.objects if o["kind"] == "Service" and "ports" in o["spec"]]
    assert [p["port"] for p in ray_service[0]["spec"]["ports"]] == [6379, 8265, 10001]
    # Volcano names it apart from the svc plugin's headless Service of the same job
    assert ray_service[0]["metadata"]["name"] == "job-head-svc"
    assert len({o["metadata"]["name"] for o in run.objects if o["kind"] == "Service"}) == 2


def test_ray_plugin_without_head_task_is_refused(sim: Any, jobs: Any) -> None:
    import pytest

    from vglobal.model.job import parse_job

    job = parse_job(jobs.job(jobs.task("worker", 1), plugins={"ray": []}))
    with pytest.raises(ValueError, match="head"):
        sim.runtime.controller.start("uid-9", 1, job)
    assert sim.backend.pods() == {}


def test_hcclrank_plugin_ranks_master_then_workers(sim: Any, jobs: Any) -> None:
    sim.start(jobs.job(jobs.task("master", 1), jobs.task("worker", 2), plugins={"hcclrank": []}))
    objs = pod_objects(sim)
    ranks = {n: o["metadata"]["annotations"]["hccl/rankIndex"] for n, o in objs.items()}
    assert ranks == {"job-master-0": "0", "job-worker-0": "1", "job-worker-1": "2"}


def test_hcclrank_prefers_the_rank_env(sim: Any, jobs: Any) -> None:
    sim.start(
        jobs.job(jobs.task("worker", 1, env=[{"name": "RANK", "value": "7"}]), plugins={"hcclrank": []})
    )
    assert pod_objects(sim)["job-worker-0"]["metadata"]["annotations"]["hccl/rankIndex"] == "7"


def test_pods_carry_volcano_labels_and_are_named_job_task_index(sim: Any, jobs: Any) -> None:
    run = sim.start(jobs.job(jobs.task("w", 2)))
    pod: PodManifest = run.pods["job-w-1"]
    labels = pod.obj["metadata"]["labels"]
    assert labels["volcano.sh/job-name"] == "job" and labels["volcano.sh/task-spec"] == "w"
    assert pod.obj["metadata"]["name"] == "job-w-1" and pod.index == 1
    assert sorted(run.pods) == ["job-w-0", "job-w-1"]
