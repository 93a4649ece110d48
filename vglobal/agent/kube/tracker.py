"""The agent's own pods and per-job objects: what was asked, what was sent, what came back.

The job controller's calls (create, bind, delete) become writes: one at a time per pod, a pod's
create only once its job's owner object exists, its bind only once it was created. Outcomes and
informer records update ``status``, the controller's view of its pods: a pod the agent created is
Pending until the cluster shows otherwise; a bound pod shows its node at once (so the scheduler
never places it twice); a pod the cluster no longer has, after it was seen, is gone (evicted).
What the cluster refused becomes a ``JobProblem`` for the runtime: an RBAC rule to fix, a job to
fail (422) or to hand back (its namespace is missing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from vglobal.agent.backends.base import DependencyObject, JobProblem
from vglobal.agent.kube import bodies, paths
from vglobal.agent.kube.api import ApiError
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.dependencies import PATCH, PUT, Dependencies
from vglobal.agent.kube.records import JOB_UID_LABEL, POD_UID_ANNOTATION, PodRecord, pod_record, status_of
from vglobal.agent.kube.vgpu import DeviceUse
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.model.job import Job

log = logging.getLogger(__name__)

FORBIDDEN_RETRY = 30.0  # seconds before a write refused by RBAC is tried again
BLOCKED_RETRY = 1.0  # a pod name still held by the previous incarnation


@dataclass(slots=True)
class TrackedPod:
    manifest: PodManifest
    ref: JobRef
    k8s_uid: str = ""
    created: bool = False
    busy: bool = False  # a write for it is in flight
    bind_to: str | None = None
    devices: tuple[DeviceUse, ...] = ()
    seen: bool = False  # the informer showed it
    placed: bool = False  # the cluster shows it on a node
    leaving: bool = False  # the controller let go of it: delete it
    retry_at: float | None = None


@dataclass(slots=True)
class TrackedJob:
    ref: JobRef
    job: Job
    queue: str
    priority: int
    objects: list[dict[str, Any]]
    owner_uid: str = ""
    dependencies: tuple[DependencyObject, ...] = ()
    waiting: list[str] = field(default_factory=list)  # pods to create once the owner exists
    retry_at: float | None = None
    noted: set[str] = field(default_factory=set)  # RBAC rules already reported


class PodTracker:
    def __init__(
        self,
        submit: Callable[[Op], None],
        clock: Callable[[], float],
        *,
        scheduler_name: str,
        bind_annotations: Callable[[TrackedPod], dict[str, str]],
    ) -> None:
        self.submit = submit
        self.clock = clock
        self.scheduler_name = scheduler_name
        self.bind_annotations = bind_annotations
        self.jobs: dict[str, TrackedJob] = {}
        self.pods: dict[str, TrackedPod] = {}  # the controller's pods, by the agent's pod id
        self.leaving: dict[str, TrackedPod] = {}
        self.status: dict[str, PodStatus] = {}
        self.problems: list[JobProblem] = []
        self.version = 0  # bumped whenever ``pods`` gains or loses a member
        self.waiting: dict[str, TrackedPod] = {}  # pods whose create is to be tried again
        self._logged: set[str] = set()
        # (job uid, owner uid) once a job's owner exists: the workload tracker writes its object then
        self.owner_listener: Callable[[str, str], None] = lambda uid, owner_uid: None
        self.dependencies = Dependencies(submit, self._refused)
        self.pod_hook: Callable[[dict[str, Any], TrackedJob], dict[str, Any]] = lambda body, tj: body
        self.bind_hook: Callable[[TrackedPod], tuple[str, str, Any] | None] = lambda t: None

    # ---- jobs

    def start_job(
        self, ref: JobRef, job: Job, queue: str, priority: int, objects: list[dict[str, Any]],
        dependencies: tuple[DependencyObject, ...] = (),
    ) -> None:
        self.jobs[ref.uid] = TrackedJob(ref, job, queue, priority, objects, dependencies=dependencies)
        self._create_owner(self.jobs[ref.uid])

    def adopt_job(self, ref: JobRef, job: Job, queue: str, priority: int, owner_uid: str) -> None:
        self.jobs[ref.uid] = TrackedJob(ref, job, queue, priority, [], owner_uid=owner_uid)

    def remove_job(self, uid: str) -> None:
        tj = self.jobs.pop(uid, None)
        self.dependencies.forget(uid)
        if tj is None:
            return
        ref = tj.ref
        body = bodies.delete_body(tj.owner_uid)
        self.submit(Op("delete-owner", uid, "DELETE", paths.configmap(ref.namespace, ref.owner_name), body))

    def _create_owner(self, tj: TrackedJob) -> None:
        ref = tj.ref
        self.submit(
            Op(
                "create-owner",
                ref.uid,
                "POST",
                paths.configmaps(ref.namespace),
                bodies.owner_body(ref, tj.job, tj.queue, tj.priority),
                fetch_on_conflict=paths.configmap(ref.namespace, ref.owner_name),
            )
        )

    # ---- pods, as the controller asks

    def create_pod(self, pod: PodManifest, ref: JobRef) -> None:
        t = TrackedPod(pod, ref)
        self.pods[pod.uid] = t
        self.version += 1
        self.status[pod.uid] = PodStatus(uid=pod.uid, phase=PodPhase.Pending)
        tj = self.jobs.get(pod.job_uid)
        if tj is not None and tj.owner_uid and tj.ref.uid not in self.dependencies.pending:
            self._send_create(t)
        elif tj is not None:
            tj.waiting.append(pod.uid)

    def adopt_pod(self, pod: PodManifest, ref: JobRef, rec: PodRecord) -> None:
        self.pods[pod.uid] = TrackedPod(
            pod, ref, k8s_uid=rec.uid, created=True, seen=True, placed=rec.node is not None, bind_to=rec.node
        )
        self.version += 1
        self.status[pod.uid] = status_of(pod.uid, rec, None)

    def bind_pod(self, uid: str, node: str, devices: tuple[DeviceUse, ...]) -> None:
        t = self.pods[uid]
        t.bind_to, t.devices = node, devices
        self.status[uid] = replace(self.status[uid], node=node)
        if t.created and not t.busy:
            self._send_bind(t)

    def delete_pod(self, uid: str) -> None:
        t = self.pods.pop(uid, None)
        self.status.pop(uid, None)
        if t is None:
            return
        self.version += 1
        t.leaving = True
        if t.busy:
            self.leaving[uid] = t  # deleted when its write comes back
        elif t.created:
            self.leaving[uid] = t
            self._send_delete(t)

    def pending_binds(self) -> list[TrackedPod]:
        """Pods the agent bound that the cluster does not show on their node yet."""
        return [t for t in self.pods.values() if t.bind_to is not None and not t.placed]

    # ---- writes

    def _send(self, t: TrackedPod, op: Op) -> None:
        t.busy = True
        self.submit(op)

    def _send_create(self, t: TrackedPod) -> None:
        tj = self.jobs[t.manifest.job_uid]
        ns, name = t.manifest.namespace, t.manifest.name
        body = self.pod_hook(bodies.pod_body(t.manifest, t.ref, tj.owner_uid, self.scheduler_name), tj)
        t.retry_at = None
        self._send(
            t,
            Op(
                "create-pod",
                t.manifest.uid,
                "POST",
                paths.pods(ns),
                body,
                fetch_on_conflict=paths.pod(ns, name),
            ),
        )

    def _send_bind(self, t: TrackedPod) -> None:
        assert t.bind_to is not None
        ns, name = t.manifest.namespace, t.manifest.name
        body = bodies.binding_body(name, t.k8s_uid, t.bind_to, self.bind_annotations(t))
        before = self.bind_hook(t)  # DRA claims allocated on the node; a scheduling gate to lift first
        self._send(t, Op("bind", t.manifest.uid, "POST", paths.binding(ns, name), body, before=before))

    def _send_delete(self, t: TrackedPod) -> None:
        ns, name = t.manifest.namespace, t.manifest.name
        self._send(
            t, Op("delete-pod", t.manifest.uid, "DELETE", paths.pod(ns, name), bodies.delete_body(t.k8s_uid))
        )

    def _resync(self, t: TrackedPod) -> None:
        ns, name = t.manifest.namespace, t.manifest.name
        self._send(t, Op("get-pod", t.manifest.uid, "GET", paths.pod(ns, name)))

    # ---- what the cluster says

    def on_pod(self, before: PodRecord | None, after: PodRecord | None) -> None:
        """An informer change of one pod (None = absent)."""
        rec = after or before
        assert rec is not None
        t = self.pods.get(rec.ours) if rec.ours else None
        if after is not None:
            if t is not None and (not t.k8s_uid or t.k8s_uid == after.uid):
                t.seen, t.k8s_uid, t.placed = True, after.uid, after.node is not None
                self.status[t.manifest.uid] = status_of(t.manifest.uid, after, t.bind_to)
            return
        if t is not None and t.seen and t.k8s_uid == rec.uid:
            self._gone(t)
        self._retry_blocked(rec.key)

    def _gone(self, t: TrackedPod) -> None:
        """The cluster no longer has this pod: someone else deleted it."""
        self.version += 1
        self.pods.pop(t.manifest.uid, None)
        self.status.pop(t.manifest.uid, None)

    def _retry_blocked(self, key: tuple[str, str]) -> None:
        for t in list(self.waiting.values()):
            if not t.busy and (t.manifest.namespace, t.manifest.name) == key:
                self._send_create(t)

    def _retry_later(self, t: TrackedPod, delay: float) -> None:
        t.retry_at = self.clock() + delay
        self.waiting[t.manifest.uid] = t

    def tick(self, now: float) -> None:
        for t in list(self.waiting.values()):
            if t.manifest.uid not in self.pods:
                self.waiting.pop(t.manifest.uid, None)
            elif t.retry_at is not None and t.retry_at <= now and not t.busy:
                self._send_create(t)
        for tj in list(self.jobs.values()):
            if tj.retry_at is not None and tj.retry_at <= now:
                tj.retry_at = None
                self._create_owner(tj)

    def on_outcome(self, out: Outcome) -> None:
        handler = {
            "create-owner": self._owner_done,
            "create-pod": self._create_done,
            "bind": self._bind_done,
            "get-pod": self._get_done,
            "delete-pod": self._delete_done,
            PUT: self._dependency_done,
            PATCH: self._dependency_done,
        }.get(out.op.kind)
        err = out.error
        if handler is not None:
            handler(out)
        elif err is None or err.status in (0, 404):
            return
        elif out.op.kind == "event":
            # never an event about a failed event: log the rule once
            if err.rbac_rule() not in self._logged:
                self._logged.add(err.rbac_rule())
                log.error(
                    "cannot record events: %s (%s)", err.rbac_rule() if err.status == 403 else "", err.message
                )
        elif out.op.kind == "create-object":
            self._refused(
                out.op.key, err, f"cannot create {out.op.path.rsplit('/', 1)[-1][:-1]} of a job plugin"
            )
        else:
            log.warning("%s %s: %s", out.op.method, out.op.path, err)

    def _pod_of(self, out: Outcome) -> TrackedPod | None:
        uid = out.op.key
        t = self.pods.get(uid) or self.leaving.get(uid)
        if t is not None:
            t.busy = False
        return t

    def _owner_done(self, out: Outcome) -> None:
        tj = self.jobs.get(out.op.key)
        if tj is None:
            return
        found = out.result if out.ok else out.existing
        if found is not None and _owned_by(found, tj.ref):
            tj.owner_uid = str(found["metadata"]["uid"])
            self._owner_ready(tj)
            return
        err = out.error
        assert err is not None
        if out.existing is not None:
            labels = (out.existing.get("metadata") or {}).get("labels") or {}
            if labels.get(JOB_UID_LABEL) is None:
                self._problem(
                    tj.ref.uid,
                    "fail",
                    "OwnerTaken",
                    f"ConfigMap {tj.ref.namespace}/{tj.ref.owner_name} exists and was not made by vglobal",
                )
                return
            # an earlier run of this name: delete it (its pods go with it), then try again
            stale = str(out.existing["metadata"]["uid"])
            self.submit(
                Op(
                    "delete-owner",
                    tj.ref.uid,
                    "DELETE",
                    paths.configmap(tj.ref.namespace, tj.ref.owner_name),
                    bodies.delete_body(stale),
                )
            )
            tj.retry_at = self.clock() + BLOCKED_RETRY
            return
        if err.status == 409:
            tj.retry_at = self.clock()
        elif not self._refused(tj.ref.uid, err, "cannot create the job's owner ConfigMap"):
            tj.retry_at = self.clock() + FORBIDDEN_RETRY

    def _dependency_done(self, out: Outcome) -> None:
        uid = self.dependencies.done(out)
        if uid is not None and (tj := self.jobs.get(uid)) is not None:
            self._owner_ready(tj)

    def _owner_ready(self, tj: TrackedJob) -> None:
        # the ConfigMaps and Secrets its pods use first, then the workload object and the pods
        if self.dependencies.start(tj.ref.uid, tj.ref, tj.owner_uid, tj.dependencies):
            return
        self.owner_listener(tj.ref.uid, tj.owner_uid)
        for obj in tj.objects:
            kind = obj.get("kind", "")
            path = (
                paths.services(tj.ref.namespace) if kind == "Service" else paths.configmaps(tj.ref.namespace)
            )
            self.submit(
                Op("create-object", tj.ref.uid, "POST", path, bodies.object_body(obj, tj.ref, tj.owner_uid))
            )
        waiting, tj.waiting = tj.waiting, []
        for uid in waiting:
            t = self.pods.get(uid)
            if t is not None and not t.busy:
                self._send_create(t)

    def _create_done(self, out: Outcome) -> None:
        t = self._pod_of(out)
        if t is None:
            return
        found = out.result if out.ok else out.existing
        if found is not None and _annotation(found, POD_UID_ANNOTATION) == t.manifest.uid:
            t.created = True
            t.k8s_uid = str(found["metadata"]["uid"])
            self._after_write(t, bool((found.get("spec") or {}).get("nodeName")))
            return
        if t.leaving:
            self.leaving.pop(t.manifest.uid, None)
            return
        err = out.error
        assert err is not None
        if out.existing is not None:
            self._blocked(t, out.existing)
        elif err.status == 409:
            self._retry_later(t, 0.0)
        elif err.status != 0 and not self._refused(
            t.manifest.job_uid, err, f"cannot create pod {t.manifest.name}"
        ):
            self._retry_later(t, FORBIDDEN_RETRY)

    def _blocked(self, t: TrackedPod, existing: dict[str, Any]) -> None:
        """The pod's name is held by another pod: an earlier incarnation goes first."""
        meta = existing.get("metadata") or {}
        if (meta.get("labels") or {}).get(JOB_UID_LABEL) != t.manifest.job_uid:
            self._problem(
                t.manifest.job_uid,
                "fail",
                "PodNameTaken",
                f"pod {t.manifest.namespace}/{t.manifest.name} exists and is not this job's",
            )
            return
        if not meta.get("deletionTimestamp"):
            ns, name = t.manifest.namespace, t.manifest.name
            self.submit(
                Op(
                    "delete-stale",
                    t.manifest.uid,
                    "DELETE",
                    paths.pod(ns, name),
                    bodies.delete_body(str(meta.get("uid", ""))),
                )
            )
        self._retry_later(t, BLOCKED_RETRY)

    def _after_write(self, t: TrackedPod, on_node: bool) -> None:
        if t.leaving:
            self._send_delete(t)
        elif t.bind_to is not None and not on_node:
            self._send_bind(t)

    def _bind_done(self, out: Outcome) -> None:
        t = self._pod_of(out)
        if t is None:
            return
        err = out.error
        if t.leaving:
            self._send_delete(t)
        elif err is None:
            return
        elif err.status == 409:
            self._resync(t)  # already bound (a retried bind, or someone else): read where
        elif err.status == 404:
            if t.manifest.uid in self.pods:
                self._gone(t)
        elif err.status != 0:
            t.bind_to, t.devices = None, ()
            if t.manifest.uid in self.status:
                self.status[t.manifest.uid] = replace(self.status[t.manifest.uid], node=None)
            self._refused(
                t.manifest.job_uid, err, f"cannot bind pod {t.manifest.name}", fail_on_invalid=False
            )

    def _get_done(self, out: Outcome) -> None:
        t = self._pod_of(out)
        if t is None:
            return
        if out.result is not None:
            rec = pod_record(out.result)
            t.bind_to = rec.node
            self.on_pod(None, rec)
        elif out.error is not None and out.error.status == 404 and t.manifest.uid in self.pods:
            self._gone(t)
        if t.leaving:
            self._send_delete(t)

    def _delete_done(self, out: Outcome) -> None:
        t = self._pod_of(out)
        if t is None:
            return
        self.leaving.pop(t.manifest.uid, None)
        if out.error is not None and out.error.status not in (0, 404):
            self._refused(
                t.manifest.job_uid, out.error, f"cannot delete pod {t.manifest.name}", fail_on_invalid=False
            )

    # ---- problems

    def _refused(self, job_uid: str, err: ApiError, what: str, *, fail_on_invalid: bool = True) -> bool:
        """Report a refusal; True if it was final for the job (no point trying again)."""
        if err.status == 403:
            rule = err.rbac_rule()
            tj = self.jobs.get(job_uid)
            log.error("%s: forbidden; the agent's RBAC lacks: %s (%s)", what, rule, err.message)
            if tj is None or rule not in tj.noted:
                if tj is not None:
                    tj.noted.add(rule)
                self._problem(job_uid, "event", "Forbidden", f"{what}: the agent's RBAC lacks {rule}")
            return False
        if err.status == 404 and "namespaces" in err.message:
            self._problem(job_uid, "reject", "NamespaceMissing", f"{what}: {err.message}")
            return True
        if fail_on_invalid and err.status in (400, 404, 409, 422, -1):
            self._problem(
                job_uid, "fail", "Invalid" if err.status == 422 else err.reason, f"{what}: {err.message}"
            )
            return True
        self._problem(job_uid, "event", err.reason or "ApiError", f"{what}: {err.message}")
        return False

    def problem(self, job_uid: str, action: str, reason: str, message: str) -> None:
        """What the cluster said of a job, for the next step (the cluster's Warning events too)."""
        self._problem(job_uid, action, reason, message)

    def _problem(self, job_uid: str, action: str, reason: str, message: str) -> None:
        if action != "event":
            log.warning("job %s: %s: %s", job_uid, reason, message)
        self.problems.append(JobProblem(job_uid, action, reason, message))

    def take_problems(self) -> list[JobProblem]:
        out, self.problems = self.problems, []
        return out


def _annotation(obj: dict[str, Any], key: str) -> str:
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(key, ""))


def _owned_by(obj: dict[str, Any], ref: JobRef) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(
        labels.get(JOB_UID_LABEL) == ref.uid and labels.get("vglobal.io/generation") == str(ref.generation)
    )
