"""An agent that starts (after a restart, a kill -9 or a Lease takeover) rebuilds its runs from the
pods it labelled: per job the newest generation found, its manifest read back from the job's owner
ConfigMap, its pods taken over as they are. Pods of older generations, and pods whose owner is
gone or belongs to another run, are deleted: the hub has moved on from them."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

from vglobal.agent.controller import JobController
from vglobal.agent.kube import bodies, paths
from vglobal.agent.kube.api import ApiError
from vglobal.agent.kube.backend import KubeBackend
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.records import GENERATION_LABEL, JOB_UID_LABEL, PodRecord
from vglobal.agent.kube.tracker import status_of
from vglobal.agent.kube.writer import Op
from vglobal.agent.pods import PodManifest, PodStatus
from vglobal.agent.run import AdoptedRun
from vglobal.model.errors import ManifestError
from vglobal.model.job import Job, parse_job

log = logging.getLogger(__name__)


def _incarnation(pod_uid: str) -> int:
    try:
        return int(pod_uid.rsplit("/", 1)[-1])
    except ValueError:
        return 0


def _delete(backend: KubeBackend, rec: PodRecord, why: str) -> None:
    log.info("deleting pod %s/%s: %s", rec.namespace, rec.name, why)
    backend.writer.submit(
        Op(
            "delete-stale",
            rec.ours,
            "DELETE",
            paths.pod(rec.namespace, rec.name),
            bodies.delete_body(rec.uid),
        )
    )


def _manifest(job: Job, rec: PodRecord) -> PodManifest | None:
    task = next((t for t in job.tasks if t.name == rec.task), None)
    if task is None or not 0 <= rec.index < task.replicas:
        return None
    obj = JobController.pod_object(job, task, rec.index, version=rec.version)
    return PodManifest(
        rec.ours, rec.name, rec.namespace, rec.job_uid, task.name, rec.index, task.pod_request, obj
    )


def _owner(backend: KubeBackend, rec: PodRecord) -> dict[str, Any] | None:
    """The owner ConfigMap of this run, if it still exists and is this run's."""
    try:
        cm = backend.api.request("GET", paths.configmap(rec.namespace, rec.owner))
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    labels = (cm.get("metadata") or {}).get("labels") or {}
    if labels.get(JOB_UID_LABEL) != rec.job_uid or labels.get(GENERATION_LABEL) != str(rec.generation):
        return None
    return cm


def recover(backend: KubeBackend) -> list[AdoptedRun]:
    """The runs found in the cluster, registered with the backend; stale pods are deleted."""
    by_job: dict[str, list[PodRecord]] = defaultdict(list)
    for rec in backend.cache.pods.values():
        if rec.ours and rec.job_uid and not rec.deleting:
            by_job[rec.job_uid].append(rec)
    out = []
    for job_uid in sorted(by_job):
        recs = by_job[job_uid]
        newest = max(r.generation for r in recs)
        for r in recs:
            if r.generation != newest:
                _delete(backend, r, f"generation {r.generation} of job {job_uid} was replaced by {newest}")
        current = sorted((r for r in recs if r.generation == newest), key=lambda r: r.name)
        run = _adopt(backend, current)
        if run is not None:
            out.append(run)
    if out:
        log.info("took over %d runs (%d pods) found in the cluster", len(out), sum(len(r.pods) for r in out))
    _drop_workloads(backend, {r.uid for r in out})
    return out


def _drop_workloads(backend: KubeBackend, adopted: set[str]) -> None:
    """Workload objects of runs not taken over are deleted (their pods go with them): the hub
    dispatches such a run again, here or elsewhere, and it must never run twice."""
    backend.wait_workloads_listed(10.0)
    for (kind_name, ns, name), rec in sorted(backend.objects.items()):
        kind = backend.kinds.get(kind_name)
        if kind is None or not rec.job_uid or rec.job_uid in adopted or rec.deleting:
            continue
        log.info("deleting %s %s/%s: its run (job %s) was not taken over", kind_name, ns, name, rec.job_uid)
        backend.writer.submit(
            Op("wl-delete", rec.job_uid, "DELETE", kind.item(ns, name), bodies.delete_body(rec.uid))
        )


def _adopt(backend: KubeBackend, recs: list[PodRecord]) -> AdoptedRun | None:
    first = recs[0]
    cm = _owner(backend, first) if first.owner else None
    data = (cm or {}).get("data") or {}
    try:
        job = parse_job(json.loads(data[bodies.MANIFEST_KEY])) if isinstance(data, dict) else None
    except (KeyError, ValueError, ManifestError):
        job = None
    if cm is None or job is None or not isinstance(data, dict):
        for r in recs:
            _delete(backend, r, "its job's owner ConfigMap is gone or is another run's")
        return None
    ref = JobRef(first.job_uid, first.generation, first.namespace, job.name)
    owner_uid = str((cm.get("metadata") or {}).get("uid", ""))
    queue, priority = str(data.get(bodies.QUEUE_KEY, "")), int(data.get(bodies.PRIORITY_KEY, 0) or 0)
    backend.tracker.adopt_job(ref, job, queue, priority, owner_uid)
    pods: list[tuple[PodManifest, PodStatus]] = []
    for r in recs:
        manifest = _manifest(job, r)
        if manifest is None:
            _delete(backend, r, f"job {job.name} has no task replica {r.task}[{r.index}]")
            continue
        backend.tracker.adopt_pod(manifest, ref, r)
        pods.append((manifest, status_of(manifest.uid, r, None)))
    return AdoptedRun(
        uid=first.job_uid,
        generation=first.generation,
        job=job,
        queue=queue,
        priority=priority,
        version=max(r.version for r in recs),
        incarnations=max(_incarnation(r.ours) for r in recs),
        pods=tuple(pods),
    )
