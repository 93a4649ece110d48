"""An agent that starts (after a restart, a kill -9 or a Lease takeover) rebuilds its runs from the
pods it labelled: per job the newest generation found, its manifest read back from the job's owner
ConfigMap, its pods taken over as they are. Pods of older generations, and pods whose owner is
gone or belongs to another run, are deleted: the hub has moved on from them.

A run written as a workload object (a RayCluster, a LeaderWorkerSet...) is rebuilt from that
object the same way: the newest generation's object is kept, with the pods its controller made,
and older generations' objects are deleted. The hub then fences what it no longer holds here: a
run it gave elsewhere, or at a newer generation, is cancelled when the agent registers."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

from vglobal.agent.controller import JobController
from vglobal.agent.deadlines import DEADLINE_ANNOTATION
from vglobal.agent.kube import bodies, paths, vgpu
from vglobal.agent.kube.api import ApiError
from vglobal.agent.kube.backend import KubeBackend
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.records import GENERATION_LABEL, JOB_UID_LABEL, PodRecord, status_of
from vglobal.agent.kube.workloads import WorkloadRecord, kind_of
from vglobal.agent.kube.writer import Op
from vglobal.agent.pods import PodManifest, PodStatus
from vglobal.agent.run import AdoptedRun
from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.workloads import parse_run
from vglobal.scheduler.api import Grant
from vglobal.scheduler.devices import node_gpus
from vglobal.scheduler.devices.mig import DEFAULT_MIG, MigConfig

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
    if rec.deadline:  # the policy deadline the pod carries survives the restart
        obj["metadata"]["annotations"][DEADLINE_ANNOTATION] = rec.deadline
    return PodManifest(
        rec.ours, rec.name, rec.namespace, rec.job_uid, task.name, rec.index, task.request_of(rec.index), obj
    )


def _owner(
    backend: KubeBackend, namespace: str, name: str, job_uid: str, generation: int
) -> dict[str, Any] | None:
    """The owner ConfigMap of this run, if it still exists and is this run's."""
    try:
        cm = backend.api.request("GET", paths.configmap(namespace, name))
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    labels = (cm.get("metadata") or {}).get("labels") or {}
    if labels.get(JOB_UID_LABEL) != job_uid or labels.get(GENERATION_LABEL) != str(generation):
        return None
    return cm


def _owned_job(cm: dict[str, Any] | None) -> tuple[Job, str, int, str] | None:
    """(job, queue, priority, owner uid) kept in a run's owner ConfigMap, None if unreadable."""
    data = (cm or {}).get("data")
    if cm is None or not isinstance(data, dict):
        return None
    try:
        job = parse_run(json.loads(data[bodies.MANIFEST_KEY]))
    except (KeyError, ValueError, ManifestError):
        return None
    queue, priority = str(data.get(bodies.QUEUE_KEY, "")), int(data.get(bodies.PRIORITY_KEY, 0) or 0)
    return job, queue, priority, str((cm.get("metadata") or {}).get("uid", ""))


def recover(backend: KubeBackend, mig: MigConfig = DEFAULT_MIG) -> list[AdoptedRun]:
    """The runs found in the cluster, registered with the backend; stale pods are deleted. The
    GPUs their pods hold are read back from the pods (``mig``: how this agent cuts MIG cards)."""
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
        run = _adopt(backend, current, mig)
        if run is not None:
            out.append(run)
    out += _adopt_workloads(backend, {r.uid for r in out})
    if out:
        log.info("took over %d runs (%d pods) found in the cluster", len(out), sum(len(r.pods) for r in out))
    return out


def _drop_object(backend: KubeBackend, rec: WorkloadRecord, why: str) -> None:
    kind = backend.kinds[rec.kind]
    log.info("deleting %s %s/%s: %s", rec.kind, rec.namespace, rec.name, why)
    backend.writer.submit(
        Op(
            "wl-delete",
            rec.job_uid,
            "DELETE",
            kind.item(rec.namespace, rec.name),
            bodies.delete_body(rec.uid),
        )
    )


def _adopt_workloads(backend: KubeBackend, taken: set[str]) -> list[AdoptedRun]:
    """Per job, its newest generation's workload object taken over with its pods; the objects of
    older generations, of runs taken over from pods, and those whose owner is gone or another
    run's are deleted (their pods go with them), so no run is ever in the cluster twice."""
    backend.wait_workloads_listed(10.0)
    by_job: dict[str, list[WorkloadRecord]] = defaultdict(list)
    for rec in backend.objects.values():
        if rec.job_uid and not rec.deleting and rec.kind in backend.kinds:
            by_job[rec.job_uid].append(rec)
    out = []
    for job_uid in sorted(by_job):
        recs = sorted(by_job[job_uid], key=lambda r: (-r.generation, r.kind, r.namespace, r.name))
        newest, stale = recs[0], recs[1:]
        for r in stale:
            _drop_object(
                backend, r, f"generation {r.generation} of job {job_uid} was replaced by {newest.generation}"
            )
        if job_uid in taken:
            _drop_object(backend, newest, f"job {job_uid} was taken over from its pods")
            continue
        run = _adopt_workload(backend, newest)
        if run is None:
            _drop_object(
                backend, newest, "its job's owner ConfigMap is gone, is another run's or names another kind"
            )
        else:
            out.append(run)
    return out


def _adopt_workload(backend: KubeBackend, rec: WorkloadRecord) -> AdoptedRun | None:
    cm = _owner(backend, rec.namespace, rec.name + bodies.OWNER_SUFFIX, rec.job_uid, rec.generation)
    found = _owned_job(cm)
    if found is None:
        return None
    job, queue, priority, owner_uid = found
    kind = kind_of(job.raw)
    if kind is None or kind.kind != rec.kind or job.name != rec.name:
        return None
    ref = JobRef(rec.job_uid, rec.generation, rec.namespace, job.name)
    backend.tracker.adopt_job(ref, job, queue, priority, owner_uid)
    pods = [p for p in backend.cache.pods.values() if p.job_uid == rec.job_uid and not p.ours]
    backend.workloads.adopt(ref, backend.kinds[rec.kind], job, owner_uid, rec, pods)
    # no pods listed: the job controller asks for its slots again, which the pods found fill
    return AdoptedRun(rec.job_uid, rec.generation, job, queue, priority, version=0, incarnations=0, pods=())


def _adopt(backend: KubeBackend, recs: list[PodRecord], mig: MigConfig) -> AdoptedRun | None:
    first = recs[0]
    cm = (
        _owner(backend, first.namespace, first.owner, first.job_uid, first.generation)
        if first.owner
        else None
    )
    found = _owned_job(cm)
    if found is None:
        for r in recs:
            _delete(backend, r, "its job's owner ConfigMap is gone or is another run's")
        return None
    job, queue, priority, owner_uid = found
    ref = JobRef(first.job_uid, first.generation, first.namespace, job.name)
    backend.tracker.adopt_job(ref, job, queue, priority, owner_uid)
    pods: list[tuple[PodManifest, PodStatus]] = []
    grants: list[tuple[str, str, tuple[Grant, ...]]] = []
    for r in recs:
        manifest = _manifest(job, r)
        if manifest is None:
            _delete(backend, r, f"job {job.name} has no task replica {r.task}[{r.index}]")
            continue
        backend.tracker.adopt_pod(manifest, ref, r)
        pods.append((manifest, status_of(manifest.uid, r, None)))
        held = _held(backend, r, mig)
        if held:
            grants.append((manifest.uid, str(r.node), held))
    return AdoptedRun(
        uid=first.job_uid,
        generation=first.generation,
        job=job,
        queue=queue,
        priority=priority,
        version=max(r.version for r in recs),
        incarnations=max(_incarnation(r.ours) for r in recs),
        pods=tuple(pods),
        grants=tuple(grants),
    )


def _held(backend: KubeBackend, rec: PodRecord, mig: MigConfig) -> tuple[Grant, ...]:
    """The vGPUs a pod on a node holds, as its bind recorded them (none once it finished)."""
    if not rec.devices or not rec.holds_node or rec.node is None:
        return ()
    spec = next((s for s in backend.cache.specs() if s.name == rec.node), None)
    if spec is None:
        return ()
    return vgpu.grants_of(rec.devices, backend.cache.uuids(rec.node), node_gpus(spec), mig)
