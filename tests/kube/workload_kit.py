"""Workload manifests for the kube contract tests, and the runs the agent is given for them.

The agent's kube backend takes a run as the model gives it: the manifest (``Job.raw``, whose
apiVersion and kind name the workload) and the gang derived from it, one task per pod template,
named by the template's role (``head`` and each worker group's name, ``submitter``, ``leader`` and
``worker``, ``main``). ``gang_job`` builds that run from the manifest and the counts a test states.
"""

from __future__ import annotations

import copy
from typing import Any

from vglobal.agent.kube.records import request_of
from vglobal.model.job import Job, Task
from vglobal.model.resources import ResourceVector

BUSYBOX = "busybox:1.36.1"


def template(cpu: str = "100m", duration: str | None = None, restart: str = "Always") -> dict[str, Any]:
    """A pod template that runs ``duration`` (the emulator's annotation, busybox's sleep on a real
    cluster) or until deleted."""
    notes = {"vglobal.io/sim-exit-code": "0"}
    if duration:
        notes["vglobal.io/sim-duration"] = duration
    seconds = duration[:-1] if duration and duration[:-1].isdigit() and duration.endswith("s") else "3600"
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": "demo"}, "annotations": notes},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX,
                    "command": ["sh", "-c", f"sleep {seconds}"],
                    "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}},
                }
            ],
        },
    }


def raycluster(
    name: str, ns: str, *, workers: int = 2, min_workers: int | None = None, cpu: str = "100m"
) -> dict[str, Any]:
    group: dict[str, Any] = {"groupName": "workers", "replicas": workers, "template": template(cpu)}
    spec: dict[str, Any] = {
        "headGroupSpec": {"rayStartParams": {}, "template": template(cpu)},
        "workerGroupSpecs": [group],
    }
    if min_workers is not None:
        spec["enableInTreeAutoscaling"] = True
        group.update(minReplicas=min_workers, maxReplicas=workers)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def rayjob(name: str, ns: str, *, duration: str = "1s") -> dict[str, Any]:
    cluster = raycluster(name, ns, workers=1)["spec"]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": ns, "annotations": {"vglobal.io/sim-duration": duration}},
        "spec": {
            "entrypoint": "python -c 'print(42)'",
            "rayClusterSpec": cluster,
            "submitterPodTemplate": template(duration=duration, restart="Never"),
        },
    }


def leaderworkerset(name: str, ns: str, *, groups: int, size: int, cpu: str = "100m") -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": groups,
            "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": template(cpu),
                "workerTemplate": template(cpu),
            },
        },
    }


def deployment(name: str, ns: str, kind: str = "Deployment", replicas: int = 2) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app.kubernetes.io/name": "demo"}},
        "template": template(),
    }
    if kind == "StatefulSet":
        spec.update(serviceName=name, podManagementPolicy="Parallel")
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": {"scheduling.volcano.sh/group-min-member": str(replicas)},
        },
        "spec": spec,
    }


def batch_job(name: str, ns: str, *, parallelism: int = 2, duration: str = "1s") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": template(duration=duration, restart="Never"),
        },
    }


def _request(tmpl: dict[str, Any]) -> ResourceVector:
    return request_of(tmpl.get("spec") or {})


def gang_job(raw: dict[str, Any], tasks: list[tuple[str, int, dict[str, Any]]]) -> Job:
    """The run of ``raw`` whose gang is ``tasks`` (role, pods, pod template), all of them needed."""
    meta = raw["metadata"]
    built = tuple(
        Task(name=role, replicas=n, min_available=n, template=copy.deepcopy(t), pod_request=_request(t))
        for role, n, t in tasks
    )
    return Job(
        name=meta["name"],
        namespace=meta.get("namespace", "default"),
        min_available=sum(n for _, n, _ in tasks),
        scheduler_name=None,
        tasks=built,
        raw=copy.deepcopy(raw),
    )
