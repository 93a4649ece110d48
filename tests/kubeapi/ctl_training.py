"""The training operators' controllers, reduced to the objects that make pods and the status they
write. A JobSet makes per replicatedJob its ``replicas`` batch/v1 Jobs ``<jobset>-<rjob>-<i>``
(Indexed), labelled as JobSet labels them, and is ``Completed`` once all of them completed or
``Failed`` once one failed. A PyTorchJob makes ``<name>-master-0`` and ``<name>-worker-<i>`` pods
labelled as the training operator labels them; it runs once all run and succeeds with its master.
An MPIJob makes its workers ``<name>-worker-<i>`` and, once they run, the launcher batch/v1 Job
``<name>-launcher``; it succeeds with the launcher and then deletes running workers
(``cleanPodPolicy: Running``). A TrainJob makes the JobSet ``<name>`` from its runtime (Trainer's
``torch-distributed``, as an admin installed it with the node template naming vglobal's scheduler)
with ``numNodes`` node pods, the trainer's image, command and resources, and its runtime patches'
pod metadata; it ends as that JobSet ends. No services, hostfiles, ssh keys or restarts."""

from __future__ import annotations

import copy
from typing import Any

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.kinds import PODS
from tests.kubeapi.store import Obj
from tests.kubeapi.workload_ctl import Ctx, is_active, owner_ref, phase
from tests.kubeapi.workload_kinds import JOBS, JOBSETS, MPIJOBS, PYTORCHJOBS, TRAINJOBS

SCHEDULER = "vglobal"  # the scheduler the installed runtime's node template names


def _cond(type_: str, reason: str, message: str = "") -> Obj:
    now = rfc3339()
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "lastUpdateTime": now,
    }


def _ended(status: Obj) -> bool:
    done = ("Completed", "Complete", "Succeeded", "Failed")
    return any(c.get("type") in done and c.get("status") == "True" for c in status.get("conditions") or [])


def _job_state(job: Obj) -> str:
    """Complete, Failed or Active, by the Job's conditions."""
    conds = {
        c.get("type") for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"
    }
    return "Complete" if "Complete" in conds else "Failed" if "Failed" in conds else "Active"


def _job_ready(job: Obj) -> bool:
    """Its ready and succeeded pods reach its parallelism, as JobSet counts a ready Job."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    want = int(spec.get("parallelism", 1))
    if spec.get("completions") is not None:
        want = min(want, int(spec["completions"]))
    return int(status.get("ready") or 0) + int(status.get("succeeded") or 0) >= want


def jobset(ctx: Ctx, js: Obj) -> None:
    meta, spec = js["metadata"], js.get("spec") or {}
    old = js.get("status") or {}
    if _ended(old):
        return
    have = {j["metadata"]["name"]: j for j in ctx.children(JOBS, js)}
    rstatus = []
    total = complete = failed = 0
    for rj in spec.get("replicatedJobs") or []:
        rname, replicas = str(rj.get("name", "")), int(rj.get("replicas", 1))
        counts = {"name": rname, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
        for i in range(replicas):
            name = f"{meta['name']}-{rname}-{i}"
            labels = {
                "jobset.sigs.k8s.io/jobset-name": meta["name"],
                "jobset.sigs.k8s.io/replicatedjob-name": rname,
                "jobset.sigs.k8s.io/job-index": str(i),
            }
            job = have.get(name)
            if job is None:
                template = copy.deepcopy(rj.get("template") or {})
                job_spec = template.get("spec") or {}
                pod_tmpl = job_spec.setdefault("template", {})
                pod_meta = pod_tmpl.setdefault("metadata", {})
                pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **labels}
                job_spec.setdefault("completionMode", "Indexed")  # JobSet's webhook defaults these two
                pod_tmpl.setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
                job = ctx.create(
                    JOBS,
                    meta["namespace"],
                    {
                        "metadata": {
                            "name": name,
                            "labels": {**((template.get("metadata") or {}).get("labels") or {}), **labels},
                            "ownerReferences": [owner_ref(JOBSETS, js)],
                        },
                        "spec": job_spec,
                    },
                )
                if job is None:
                    continue
            total += 1
            state = _job_state(job)
            key = {"Complete": "succeeded", "Failed": "failed"}.get(state, "active")
            counts[key] += 1
            complete += state == "Complete"
            failed += state == "Failed"
            counts["ready"] += int(state == "Active" and _job_ready(job))
        rstatus.append(counts)
    status: Obj = {"replicatedJobsStatus": rstatus, "restarts": 0}
    if failed:
        status["conditions"] = [
            _cond("Failed", "FailedJobs", "jobset failed due to one or more job failures")
        ]
        for job in have.values():
            ctx.delete(JOBS, job)
    elif total and complete == total:
        status["conditions"] = [_cond("Completed", "AllJobsCompleted", "jobset completed successfully")]
    if "conditions" in status:
        status["terminalState"] = status["conditions"][0]["type"]
    ctx.set_status(JOBSETS, js, status)


def _replica_pods(ctx: Ctx, kind: Any, obj: Obj, rtype: str, replicas: int) -> list[Obj]:
    """The pods ``<name>-<type>-<i>`` of one replica type, made when missing (a finished one is kept)."""
    meta = obj["metadata"]
    lower = rtype.lower()
    mine = {
        p["metadata"]["name"]: p
        for p in ctx.children(PODS, obj)
        if (p["metadata"].get("labels") or {}).get("training.kubeflow.org/replica-type") == lower
    }
    field = "pytorchReplicaSpecs" if kind is PYTORCHJOBS else "mpiReplicaSpecs"
    specs = (obj.get("spec") or {}).get(field) or {}
    template = (specs.get(rtype) or {}).get("template")
    for i in range(replicas):
        name = f"{meta['name']}-{lower}-{i}"
        if name in mine:
            continue
        labels = {
            "training.kubeflow.org/operator-name": "pytorchjob-controller"
            if kind is PYTORCHJOBS
            else "mpi-operator",
            "training.kubeflow.org/job-name": meta["name"],
            "training.kubeflow.org/replica-type": lower,
            "training.kubeflow.org/replica-index": str(i),
        }
        # the pod restarts as its replica spec says (ExitCode: the operator restarts it, not the kubelet)
        policy = str(specs.get(rtype, {}).get("restartPolicy") or "OnFailure")
        restart = {"restartPolicy": "Never" if policy == "ExitCode" else policy}
        pod = ctx.create_from_template(kind, obj, template, labels=labels, name=name, spec_extra=restart)
        if pod is not None:
            mine[name] = pod
    return list(mine.values())


def _replica_status(pods: list[Obj]) -> Obj:
    return {
        "active": sum(1 for p in pods if is_active(p)),
        "succeeded": sum(1 for p in pods if phase(p) == "Succeeded"),
        "failed": sum(1 for p in pods if phase(p) == "Failed"),
    }


def pytorchjob(ctx: Ctx, pj: Obj) -> None:
    old = pj.get("status") or {}
    if _ended(old):
        return
    specs = (pj.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    pods = {t: _replica_pods(ctx, PYTORCHJOBS, pj, t, int(s.get("replicas", 1))) for t, s in specs.items()}
    every = [p for ps in pods.values() for p in ps]
    conditions = [_cond("Created", "PyTorchJobCreated", f"PyTorchJob {pj['metadata']['name']} is created.")]
    master = pods.get("Master") or pods.get("Worker") or []
    if any(phase(p) == "Failed" for p in every):
        conditions.append(_cond("Failed", "PyTorchJobFailed", "a replica failed"))
    elif master and all(phase(p) == "Succeeded" for p in master):
        conditions.append(_cond("Succeeded", "PyTorchJobSucceeded", "the master succeeded"))
        for p in every:
            if is_active(p):
                ctx.delete(PODS, p)
    elif every and all(phase(p) == "Running" for p in every):
        conditions.append(_cond("Running", "PyTorchJobRunning", "all replicas run"))
    status = {
        "conditions": conditions,
        "replicaStatuses": {t: _replica_status(ps) for t, ps in pods.items()},
        "startTime": old.get("startTime") or rfc3339(),
    }
    ctx.set_status(PYTORCHJOBS, pj, status)


def mpijob(ctx: Ctx, mj: Obj) -> None:
    meta, old = mj["metadata"], mj.get("status") or {}
    if _ended(old):
        return
    specs = (mj.get("spec") or {}).get("mpiReplicaSpecs") or {}
    workers = _replica_pods(ctx, MPIJOBS, mj, "Worker", int((specs.get("Worker") or {}).get("replicas", 0)))
    conditions = [_cond("Created", "MPIJobCreated", f"MPIJob {meta['namespace']}/{meta['name']} is created.")]
    launchers = ctx.children(JOBS, mj)
    if not launchers and all(phase(p) == "Running" for p in workers):
        launcher = copy.deepcopy((specs.get("Launcher") or {}).get("template") or {})
        lmeta = launcher.setdefault("metadata", {})
        lmeta["labels"] = {
            **(lmeta.get("labels") or {}),
            "training.kubeflow.org/job-name": meta["name"],
            "training.kubeflow.org/replica-type": "launcher",
        }
        launcher.setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
        made = ctx.create(
            JOBS,
            meta["namespace"],
            {
                "metadata": {"name": f"{meta['name']}-launcher", "ownerReferences": [owner_ref(MPIJOBS, mj)]},
                "spec": {"backoffLimit": 6, "template": launcher},
            },
        )
        launchers = [made] if made is not None else []
    state = _job_state(launchers[0]) if launchers else "Pending"
    if state == "Complete":
        conditions.append(_cond("Succeeded", "MPIJobSucceeded", "the launcher completed"))
        for p in workers:
            if phase(p) == "Running":
                ctx.delete(PODS, p)
    elif state == "Failed" or any(phase(p) == "Failed" for p in workers):
        conditions.append(_cond("Failed", "MPIJobFailed", "the launcher or a worker failed"))
    elif state == "Active":
        conditions.append(_cond("Running", "MPIJobRunning", "the launcher runs"))
    ctx.set_status(
        MPIJOBS, mj, {"conditions": conditions, "replicaStatuses": {"Worker": _replica_status(workers)}}
    )


def _node_template(tj: Obj) -> Obj:
    """The torch-distributed runtime's node pod template, with the TrainJob's trainer and its
    runtime patches' pod metadata."""
    spec = tj.get("spec") or {}
    trainer = spec.get("trainer") or {}
    node: Obj = {
        "name": "node",
        "image": trainer.get("image", "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"),
    }
    for field in ("command", "args", "env"):
        if field in trainer:
            node[field] = trainer[field]
    if "resourcesPerNode" in trainer:
        node["resources"] = trainer["resourcesPerNode"]
    pod: Obj = {
        "metadata": {"labels": {}, "annotations": {}},
        "spec": {"schedulerName": SCHEDULER, "restartPolicy": "Never", "containers": [node]},
    }
    for patch in spec.get("runtimePatches") or []:
        for rj in (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}).get(
            "replicatedJobs"
        ) or []:
            if rj.get("name") != "node":
                continue
            pmeta = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get(
                "metadata"
            ) or {}
            pod["metadata"]["labels"].update(pmeta.get("labels") or {})
            pod["metadata"]["annotations"].update(pmeta.get("annotations") or {})
    return pod


def trainjob(ctx: Ctx, tj: Obj) -> None:
    meta, old = tj["metadata"], tj.get("status") or {}
    if _ended(old):
        return
    nodes = int(((tj.get("spec") or {}).get("trainer") or {}).get("numNodes", 1))
    sets = ctx.children(JOBSETS, tj)
    if not sets:
        made = ctx.create(
            JOBSETS,
            meta["namespace"],
            {
                "apiVersion": JOBSETS.api_version,
                "kind": "JobSet",
                "metadata": {
                    "name": meta["name"],
                    "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
                    "ownerReferences": [owner_ref(TRAINJOBS, tj)],
                },
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "replicas": 1,
                            "template": {
                                "spec": {
                                    "parallelism": nodes,
                                    "completions": nodes,
                                    "backoffLimit": 0,
                                    "template": _node_template(tj),
                                }
                            },
                        }
                    ]
                },
            },
        )
        sets = [made] if made is not None else []
    js = (sets[0].get("status") or {}) if sets else {}
    status: Obj = {"jobsStatus": js.get("replicatedJobsStatus") or []}
    end = js.get("terminalState")
    if end == "Completed":
        status["conditions"] = [_cond("Complete", "JobsCompleted", "TrainJob is completed")]
    elif end == "Failed":
        status["conditions"] = [_cond("Failed", "JobsFailed", "TrainJob failed")]
    ctx.set_status(TRAINJOBS, tj, status)


RECONCILERS = {JOBSETS: jobset, PYTORCHJOBS: pytorchjob, MPIJOBS: mpijob, TRAINJOBS: trainjob}
