"""Volcano's job plugins (``spec.plugins``), applied to the pod objects the controller creates.

Only their effect on pods and the extra objects they would create (services, config maps) is
modelled: the sim stores both, a kube backend would create them. Arguments use Volcano's
``--name=value`` flag form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vglobal.model.job import Job

TASK_INDEX_ENVS = ("VK_TASK_INDEX", "VC_TASK_INDEX")
HCCL_RANK_ANNOTATION = "hccl/rankIndex"
RAY_PORTS = (
    ("gcs", "port", 6379),
    ("dashboard", "dashboardPort", 8265),
    ("client-server", "clientPort", 10001),
)


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def _flags(args: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.lstrip("-").partition("=")
        out[key] = value if sep else "true"
    return out


def _containers(pod: dict[str, Any], *, init: bool = True) -> list[dict[str, Any]]:
    spec = pod.setdefault("spec", {})
    out = list(spec.get("containers") or [])
    if init:
        out += list(spec.get("initContainers") or [])
    return out


def _set_env(container: dict[str, Any], name: str, value: str) -> None:
    env = container.setdefault("env", [])
    for item in env:
        if item.get("name") == name:
            item["value"] = value
            return
    env.append({"name": name, "value": value})


def _env_key(task: str) -> str:
    return task.upper().replace("-", "_")


def _hosts(job: Job, task: str, replicas: int) -> list[str]:
    return [f"{pod_name(job.name, task, i)}.{job.name}" for i in range(replicas)]


# ---- OnJobAdd: objects created once per job


def _svc_objects(job: Job, _args: Mapping[str, str]) -> list[dict[str, Any]]:
    data: dict[str, str] = {}
    for t in job.tasks:
        hosts = _hosts(job, t.name, t.replicas)
        data[f"{t.name}.host"] = "\n".join(hosts)
        data[f"VC_{_env_key(t.name)}_HOSTS"] = ",".join(hosts)
        data[f"VC_{_env_key(t.name)}_NUM"] = str(t.replicas)
    selector = {"volcano.sh/job-name": job.name, "volcano.sh/job-namespace": job.namespace}
    return [
        {
            "kind": "Service",
            "metadata": {"name": job.name, "namespace": job.namespace},
            "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": True},
        },
        {
            "kind": "ConfigMap",
            "metadata": {"name": f"{job.name}-svc", "namespace": job.namespace},
            "data": data,
        },
    ]


def _ray_objects(job: Job, args: Mapping[str, str]) -> list[dict[str, Any]]:
    head = args.get("head", "head")
    ports = [
        {"name": n, "port": int(args.get(flag, default)), "targetPort": n} for n, flag, default in RAY_PORTS
    ]
    selector = {
        "volcano.sh/job-name": job.name,
        "volcano.sh/job-namespace": job.namespace,
        "volcano.sh/task-spec": head,
    }
    return [
        {
            "kind": "Service",
            "metadata": {"name": f"{job.name}-head-svc", "namespace": job.namespace},
            "spec": {"selector": selector, "ports": ports},
        }
    ]


def job_objects(job: Job) -> list[dict[str, Any]]:
    """Services and config maps the job's plugins create (svc, ray)."""
    out: list[dict[str, Any]] = []
    builders: dict[str, Callable[[Job, Mapping[str, str]], list[dict[str, Any]]]] = {
        "svc": _svc_objects,
        "ray": _ray_objects,
    }
    for name in sorted(job.plugins):
        builder = builders.get(name)
        if builder is not None:
            out += builder(job, _flags(job.plugins[name]))
    return out


# ---- OnPodCreate: per-pod changes


def _env_pod(pod: dict[str, Any], job: Job, task: str, index: int, _args: Mapping[str, str]) -> None:
    for c in _containers(pod):
        for name in TASK_INDEX_ENVS:
            _set_env(c, name, str(index))


def _svc_pod(pod: dict[str, Any], job: Job, task: str, index: int, _args: Mapping[str, str]) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("hostname", pod["metadata"]["name"])
    spec.setdefault("subdomain", job.name)
    volume = f"{job.name}-svc"
    volumes = spec.setdefault("volumes", [])
    if not any(v.get("name") == volume for v in volumes):
        volumes.append({"name": volume, "configMap": {"name": volume}})
    for c in _containers(pod):
        mounts = c.setdefault("volumeMounts", [])
        if not any(m.get("name") == volume for m in mounts):
            mounts.append({"name": volume, "mountPath": "/etc/volcano"})
        for t in job.tasks:
            _set_env(c, f"VC_{_env_key(t.name)}_HOSTS", ",".join(_hosts(job, t.name, t.replicas)))
            _set_env(c, f"VC_{_env_key(t.name)}_NUM", str(t.replicas))


def _ray_pod(pod: dict[str, Any], job: Job, task: str, index: int, args: Mapping[str, str]) -> None:
    head, worker = args.get("head", "head"), args.get("worker", "worker")
    head_container = args.get("headContainer", "head")
    worker_container = args.get("workerContainer", "worker")
    port, dash, client = (int(args.get(flag, default)) for _, flag, default in RAY_PORTS)
    head_task = next((t for t in job.tasks if t.name == head), None)
    if head_task is None:
        raise ValueError(f"ray plugin: job {job.name} has no head task {head!r}")
    for c in _containers(pod, init=False):
        if task == head and c.get("name") == head_container:
            ports = c.setdefault("ports", [])
            have = {p.get("containerPort") for p in ports}
            for (name, _, _), number in zip(RAY_PORTS, (port, dash, client), strict=True):
                if number not in have:
                    ports.append({"name": name, "containerPort": number})
            c["command"] = [
                "sh",
                "-c",
                f"ray start --head --block --dashboard-host=0.0.0.0 --port={port} "
                f"--dashboard-port={dash} --ray-client-server-port={client}",
            ]
        if task == worker and c.get("name") == worker_container:
            tspec = head_task.template.get("spec") or {}
            host = tspec.get("hostname") or pod_name(job.name, head, 0)
            sub = tspec.get("subdomain") or job.name
            c["command"] = ["sh", "-c", f"ray start --block --address={host}.{sub}:{port}"]


def _hcclrank_pod(pod: dict[str, Any], job: Job, task: str, index: int, args: Mapping[str, str]) -> None:
    annotations = pod["metadata"].setdefault("annotations", {})
    if annotations.get(HCCL_RANK_ANNOTATION):
        return
    for c in _containers(pod, init=False):
        for e in c.get("env") or []:
            if e.get("name") == "RANK" and e.get("value"):
                annotations[HCCL_RANK_ANNOTATION] = str(e["value"])
                return
    master, worker = args.get("master", "master"), args.get("worker", "worker")
    if task == master:
        annotations[HCCL_RANK_ANNOTATION] = str(index)
    elif task == worker:
        masters = sum(t.replicas for t in job.tasks if t.name == master)
        annotations[HCCL_RANK_ANNOTATION] = str(masters + index)


_POD_HOOKS: dict[str, Callable[[dict[str, Any], Job, str, int, Mapping[str, str]], None]] = {
    "env": _env_pod,
    "svc": _svc_pod,
    "ray": _ray_pod,
    "hcclrank": _hcclrank_pod,
}


def apply_pod_plugins(pod: dict[str, Any], job: Job, task: str, index: int) -> None:
    """Run every configured plugin's pod hook, in plugin-name order (deterministic)."""
    for name in sorted(job.plugins):
        hook = _POD_HOOKS.get(name)
        if hook is not None:
            hook(pod, job, task, index, _flags(job.plugins[name]))
