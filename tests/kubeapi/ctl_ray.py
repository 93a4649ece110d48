"""KubeRay's RayCluster and RayJob controllers, reduced to their pods and status. A RayCluster has one
head pod (``<name>-head-xxxxx``) and per worker group its desired replicas x numOfHosts pods
(``<name>-<group>-worker-xxxxx``), labelled as KubeRay labels them, plus the head Service; finished
pods are deleted and made again. ``state`` turns ``ready`` once every pod runs. A RayJob makes its
RayCluster (``<name>-xxxxx``, labelled originated-from RayJob) and, once that is ready, in K8sJobMode
the submitter batch/v1 Job ``<name>`` from ``submitterPodTemplate`` (or KubeRay's default); the
submitter's end decides ``jobStatus`` SUCCEEDED or FAILED. A RayService makes its RayCluster
(``<name>-raycluster-xxxxx``) from ``rayClusterConfig`` and is ``Ready`` once that is ready (no Serve
applications are deployed). ``vglobal.io/sim-*`` annotations of the
RayJob go on its default submitter pod, so the emulator's kubelet knows when it ends."""

from __future__ import annotations

import random
from typing import Any

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.kinds import PODS, SERVICES
from tests.kubeapi.store import Obj
from tests.kubeapi.workload_ctl import Ctx, is_active, is_ready, owner_ref, phase
from tests.kubeapi.workload_kinds import JOBS, RAYCLUSTERS, RAYJOBS, RAYSERVICES

_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"
SIM_KEYS = ("vglobal.io/sim-duration", "vglobal.io/sim-exit-code")


def desired_workers(group: Obj, autoscaling: bool) -> int:
    """KubeRay's desired replicas of a worker group: ``replicas`` clamped to [min, max] (``minReplicas``
    when unset), 0 when suspended, times ``numOfHosts``."""
    if group.get("suspend"):
        return 0
    lo = int(group.get("minReplicas", 0))
    hi = int(group.get("maxReplicas", 2**31 - 1))
    replicas = group.get("replicas")
    want = lo if replicas is None else int(replicas)
    want = max(lo, min(hi, want)) if autoscaling or replicas is None else want
    return want * int(group.get("numOfHosts", 1))


def _labels(cluster: str, node_type: str, group: str) -> dict[str, str]:
    return {
        "ray.io/cluster": cluster,
        "ray.io/node-type": node_type,
        "ray.io/group": group,
        "ray.io/identifier": f"{cluster}-{node_type}",
        "ray.io/is-ray-node": "yes",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }


def _keep(
    ctx: Ctx, rc: Obj, pods: list[Obj], want: int, template: Obj | None, labels: dict[str, str], prefix: str
) -> list[Obj]:
    for p in pods:
        if phase(p) in ("Succeeded", "Failed"):
            ctx.delete(PODS, p)  # KubeRay deletes a terminated Ray pod and makes a new one
    live = [p for p in pods if is_active(p)]
    for _ in range(want - len(live)):
        pod = ctx.create_from_template(RAYCLUSTERS, rc, template, labels=labels, generate_name=prefix)
        if pod is not None:
            live.append(pod)
    for extra in live[want:]:
        ctx.delete(PODS, extra)
    return live[:want]


def raycluster(ctx: Ctx, rc: Obj) -> None:
    name, spec = rc["metadata"]["name"], rc.get("spec") or {}
    autoscaling = bool(spec.get("enableInTreeAutoscaling"))
    pods = ctx.children(PODS, rc)
    suspended = bool(spec.get("suspend"))
    head_spec = spec.get("headGroupSpec") or {}
    heads = _keep(
        ctx,
        rc,
        [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "head"],
        0 if suspended else 1,
        head_spec.get("template"),
        _labels(name, "head", "headgroup"),
        f"{name}-head-",
    )
    desired = ready_workers = 0
    for group in spec.get("workerGroupSpecs") or []:
        gname = str(group.get("groupName", ""))
        want = 0 if suspended else desired_workers(group, autoscaling)
        desired += want
        mine = [
            p
            for p in pods
            if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == "worker"
            and (p["metadata"].get("labels") or {}).get("ray.io/group") == gname
        ]
        live = _keep(
            ctx,
            rc,
            mine,
            want,
            group.get("template"),
            _labels(name, "worker", gname),
            f"{name}-{gname}-worker-",
        )
        ready_workers += sum(1 for p in live if is_ready(p))
    if not ctx.children(SERVICES, rc) and not suspended:
        ctx.create(
            SERVICES,
            rc["metadata"]["namespace"],
            {
                "metadata": {
                    "name": f"{name}-head-svc",
                    "labels": _labels(name, "head", "headgroup"),
                    "ownerReferences": [owner_ref(RAYCLUSTERS, rc)],
                },
                "spec": {
                    "selector": {"ray.io/cluster": name, "ray.io/node-type": "head"},
                    "ports": [
                        {"name": "gcs", "port": 6379},
                        {"name": "dashboard", "port": 8265},
                        {"name": "client", "port": 10001},
                    ],
                },
            },
        )
    old = rc.get("status") or {}
    head_ready = bool(heads) and all(is_ready(p) for p in heads)
    ready = head_ready and ready_workers >= desired and not suspended
    status: Obj = {
        "state": "suspended" if suspended else "ready" if ready or old.get("state") == "ready" else "",
        "desiredWorkerReplicas": desired,
        "readyWorkerReplicas": ready_workers,
        "availableWorkerReplicas": ready_workers,
        "observedGeneration": rc["metadata"].get("generation", 1),
        "conditions": [
            {
                "type": "HeadPodReady",
                "status": "True" if head_ready else "False",
                "reason": "HeadPodRunningAndReady" if head_ready else "HeadPodNotFound",
            },
            {
                "type": "RayClusterProvisioned",
                "status": "True" if ready or old.get("state") == "ready" else "False",
                "reason": "AllPodRunningAndReadyFirstTime" if ready else "RayClusterPodsProvisioning",
            },
        ],
    }
    if heads:
        status["head"] = {
            "podName": heads[0]["metadata"]["name"],
            "podIP": (heads[0].get("status") or {}).get("podIP", ""),
        }
    if not status["state"]:
        del status["state"]
    ctx.set_status(RAYCLUSTERS, rc, status)


def default_submitter(rayjob: Obj) -> Obj:
    """KubeRay's default submitter pod template: the head's image, 500m / 200Mi."""
    head = (((rayjob.get("spec") or {}).get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get(
        "template"
    ) or {}
    image = ((head.get("spec") or {}).get("containers") or [{}])[0].get("image", "rayproject/ray")
    notes = {k: v for k, v in ((rayjob["metadata"].get("annotations")) or {}).items() if k in SIM_KEYS}
    return {
        "metadata": {"annotations": notes},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": image,
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                    },
                }
            ],
        },
    }


def rayjob(ctx: Ctx, rj: Obj) -> None:
    meta, spec = rj["metadata"], rj.get("spec") or {}
    old = rj.get("status") or {}
    if old.get("jobDeploymentStatus") in ("Complete", "Failed"):
        return
    origin = {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": meta["name"]}
    clusters = ctx.children(RAYCLUSTERS, rj)
    cluster = clusters[0] if clusters else None
    if cluster is None:
        body = {
            "metadata": {
                "name": f"{meta['name']}-{''.join(random.choices(_SUFFIX, k=5))}",
                "labels": {**(meta.get("labels") or {}), **origin},
                "ownerReferences": [owner_ref(RAYJOBS, rj)],
            },
            "spec": spec.get("rayClusterSpec") or {},
        }
        cluster = ctx.create(RAYCLUSTERS, meta["namespace"], body)
        if cluster is None:
            return
    status: dict[str, Any] = {
        "rayClusterName": cluster["metadata"]["name"],
        "jobId": old.get("jobId") or f"{meta['name']}-{''.join(random.choices(_SUFFIX, k=5))}",
        "jobDeploymentStatus": "Initializing",
        "jobStatus": "PENDING",
        "startTime": old.get("startTime") or rfc3339(),
    }
    if (cluster.get("status") or {}).get("state") == "ready":
        status["jobDeploymentStatus"] = "Running"
        mode = spec.get("submissionMode", "K8sJobMode")
        if mode == "K8sJobMode":
            status["jobStatus"] = _submitter(ctx, rj, origin)
        else:
            status["jobStatus"] = "RUNNING"  # sidecar / HTTP modes: no submitter pod to follow here
    if status["jobStatus"] in ("SUCCEEDED", "FAILED"):
        status["jobDeploymentStatus"] = "Complete" if status["jobStatus"] == "SUCCEEDED" else "Failed"
        status["endTime"] = rfc3339()
        if spec.get("shutdownAfterJobFinishes"):
            ctx.delete(RAYCLUSTERS, cluster)
    ctx.set_status(RAYJOBS, rj, status)


def _submitter(ctx: Ctx, rj: Obj, origin: dict[str, str]) -> str:
    jobs = ctx.children(JOBS, rj)
    if not jobs:
        spec = rj.get("spec") or {}
        template = spec.get("submitterPodTemplate") or default_submitter(rj)
        backoff = ((spec.get("submitterConfig") or {}).get("backoffLimit")) or 2
        created = ctx.create(
            JOBS,
            rj["metadata"]["namespace"],
            {
                "metadata": {
                    "name": rj["metadata"]["name"],
                    "labels": origin,
                    "ownerReferences": [owner_ref(RAYJOBS, rj)],
                },
                "spec": {"backoffLimit": backoff, "template": template},
            },
        )
        return "PENDING" if created is None else "RUNNING"
    conditions = (jobs[0].get("status") or {}).get("conditions") or []
    if any(c.get("type") == "Complete" for c in conditions):
        return "SUCCEEDED"
    if any(c.get("type") == "Failed" for c in conditions):
        return "FAILED"
    return "RUNNING"


def rayservice(ctx: Ctx, rs: Obj) -> None:
    meta, spec = rs["metadata"], rs.get("spec") or {}
    clusters = ctx.children(RAYCLUSTERS, rs)
    cluster = clusters[0] if clusters else None
    if cluster is None:
        body = {
            "metadata": {
                "name": f"{meta['name']}-raycluster-{''.join(random.choices(_SUFFIX, k=5))}",
                "labels": {
                    "ray.io/originated-from-crd": "RayService",
                    "ray.io/originated-from-cr-name": meta["name"],
                },
                "ownerReferences": [owner_ref(RAYSERVICES, rs)],
            },
            "spec": spec.get("rayClusterConfig") or {},
        }
        cluster = ctx.create(RAYCLUSTERS, meta["namespace"], body)
        if cluster is None:
            return
    ready = (cluster.get("status") or {}).get("state") == "ready"
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "NonZeroServeEndpoints" if ready else "Initializing",
        "lastTransitionTime": rfc3339(),
    }
    old = rs.get("status") or {}
    if any(
        c.get("type") == "Ready" and c.get("status") == condition["status"]
        for c in old.get("conditions") or []
    ):
        return
    status = {
        "activeServiceStatus": {"rayClusterName": cluster["metadata"]["name"]} if ready else {},
        "pendingServiceStatus": {} if ready else {"rayClusterName": cluster["metadata"]["name"]},
        "conditions": [condition],
        "observedGeneration": meta.get("generation", 1),
    }
    ctx.set_status(RAYSERVICES, rs, status)


RECONCILERS = {RAYCLUSTERS: raycluster, RAYJOBS: rayjob, RAYSERVICES: rayservice}
