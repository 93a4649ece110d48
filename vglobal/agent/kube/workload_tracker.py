"""Runs whose pods a controller in the cluster makes (RayCluster, LWS, Deployment, ...): the object
the agent writes for each, the pods that object's controller made, and the slots the job controller
asked for.

The job controller still thinks in pods: each ``create_pod`` here is a slot, not a write. A pod the
workload's controller made (found by the run's labels, of this generation) fills a free slot of its
role (its pod template), so the scheduler's plan for the slot becomes a Binding of that pod; a slot
whose pod is gone (or failed and was replaced) is free again and waits to be planned anew. The
object's status, followed by an informer, ends the run when the workload says it ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from vglobal.agent.backends.base import JobProblem
from vglobal.agent.kube import bodies, paths
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.kinds import Workload
from vglobal.agent.kube.kinds.base import Extra
from vglobal.agent.kube.records import JOB_UID_LABEL, PodRecord
from vglobal.agent.kube.vgpu import DeviceUse
from vglobal.agent.kube.workloads import WorkloadRecord
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.model.job import Job

log = logging.getLogger(__name__)
Key = tuple[str, str]
BindNotes = Callable[[PodManifest, str, tuple[DeviceUse, ...]], dict[str, str]]
STALE_RETRY = 1.0  # seconds before a create blocked by an earlier run's object is tried again


@dataclass(slots=True)
class Slot:
    manifest: PodManifest
    role: str
    group: int = -1  # the LeaderWorkerSet group whose pod it waits for (-1: any)
    bind_to: str | None = None
    devices: tuple[DeviceUse, ...] = ()
    pod: PodRecord | None = None  # the controller-made pod that fills it
    busy: bool = False  # a bind in flight


@dataclass(slots=True)
class TrackedWorkload:
    ref: JobRef
    kind: Workload
    job: Job
    roles: dict[str, str]  # task name -> role of the pod template it stands for
    owner_uid: str = ""
    obj_uid: str = ""
    phase: str = "Pending"
    slots: dict[str, Slot] = field(default_factory=dict)
    loose: dict[Key, PodRecord] = field(default_factory=dict)  # its pods that fill no slot
    retry_at: float | None = None
    # Objects written beside its own (a PodGroup's pods) that found an earlier run's in the way.
    extras_due: list[Extra] = field(default_factory=list)


def task_roles(kind: Workload, job: Job) -> dict[str, str]:
    """Task name -> role: the task of the same name, else the template at the task's position."""
    roles = kind.roles_of(job.raw)
    names = [t.name for t in job.tasks]
    if set(names) <= set(roles):
        return {n: n for n in names}
    if len(names) == len(roles):
        return dict(zip(names, roles, strict=True))
    return {n: "" for n in names}  # matched by pod request alone


class WorkloadTracker:
    def __init__(
        self,
        submit: Callable[[Op], None],
        clock: Callable[[], float],
        *,
        scheduler_name: str,
        bind_notes: BindNotes,
    ) -> None:
        self.submit, self.clock = submit, clock
        self.scheduler_name = scheduler_name
        self.bind_notes = bind_notes
        self.claim_hook: Callable[[Job, PodRecord, Slot], None] = lambda job, rec, slot: None
        self.runs: dict[str, TrackedWorkload] = {}
        self.slots: dict[str, Slot] = {}
        self.by_pod: dict[Key, str] = {}  # pod -> slot uid
        self.status: dict[str, PodStatus] = {}
        self.problems: list[JobProblem] = []
        self.version = 0

    # ---- runs

    def start(self, ref: JobRef, kind: Workload, job: Job) -> None:
        self.runs[ref.uid] = TrackedWorkload(ref, kind, job, task_roles(kind, job))

    def adopt(
        self,
        ref: JobRef,
        kind: Workload,
        job: Job,
        owner_uid: str,
        obj: WorkloadRecord,
        pods: list[PodRecord],
    ) -> None:
        """Take over a run whose object is in the cluster (an agent restart): the object is kept
        as it is, and the pods its controller made (of this generation) wait to fill the slots the
        job controller asks for again, bound ones staying on their nodes. A pod that succeeded
        meanwhile fills a slot too (a batch Job's done pod is not made again); a failed one does
        not (its controller makes a replacement)."""
        tw = TrackedWorkload(ref, kind, job, task_roles(kind, job), owner_uid=owner_uid, obj_uid=obj.uid)
        self.runs[ref.uid] = tw
        found = [
            r
            for r in pods
            if r.generation == ref.generation and not r.deleting and r.phase != PodPhase.Failed
        ]
        for rec in sorted(found, key=lambda r: (r.finished, r.name)):  # live pods fill slots first
            tw.loose[rec.key] = rec
        self.on_object(None, obj)  # its status as it stands: ready, or ended while no agent looked

    def owner_ready(self, uid: str, owner_uid: str) -> None:
        tw = self.runs.get(uid)
        if tw is not None:
            tw.owner_uid = owner_uid
            self._create(tw)

    def _create(self, tw: TrackedWorkload) -> None:
        ref, kind = tw.ref, tw.kind
        body = kind.body(tw.job.raw, ref, tw.owner_uid, self.scheduler_name)
        path = kind.collection(ref.namespace)
        self.submit(
            Op("wl-create", ref.uid, "POST", path, body, fetch_on_conflict=kind.item(ref.namespace, ref.name))
        )
        for extra in kind.extras(tw.job.raw, ref, tw.owner_uid, self.scheduler_name):
            self._create_extra(tw, extra)

    def _create_extra(self, tw: TrackedWorkload, extra: Extra) -> None:
        op = Op("wl-extra", tw.ref.uid, "POST", extra.collection, extra.body, fetch_on_conflict=extra.item)
        self.submit(replace(op, extra=extra))

    def respecify(self, uid: str, job: Job) -> None:
        """The run's job applied anew: the object's replicas follow (a merge patch of the fields
        the kind scales by; its controller then makes or removes pods, which fill or leave slots as
        the job controller asks)."""
        tw = self.runs.get(uid)
        if tw is None:
            return
        tw.job = job
        patch = tw.kind.scale_patch(job.raw)
        if patch:
            ref = tw.ref
            self.submit(Op("wl-patch", uid, "PATCH", tw.kind.item(ref.namespace, ref.name), patch))

    def remove(self, uid: str) -> None:
        tw = self.runs.pop(uid, None)
        if tw is None:
            return
        for suid in list(tw.slots):
            self._drop(suid)
        for key in tw.loose:
            self.by_pod.pop(key, None)
        ref = tw.ref
        path = tw.kind.item(ref.namespace, ref.name)
        self.submit(Op("wl-delete", uid, "DELETE", path, bodies.delete_body(tw.obj_uid)))
        for extra in tw.kind.extras(tw.job.raw, ref, tw.owner_uid, self.scheduler_name):
            self.submit(Op("wl-delete", uid, "DELETE", extra.item, bodies.delete_body()))

    # ---- slots, as the job controller asks

    def add_slot(self, pod: PodManifest) -> None:
        tw = self.runs[pod.job_uid]
        slot = Slot(pod, tw.roles.get(pod.task, ""), slot_group(tw, pod))
        tw.slots[pod.uid] = self.slots[pod.uid] = slot
        self.version += 1
        self._show(slot)
        for key, rec in list(tw.loose.items()):
            if self._fits(slot, rec):
                del tw.loose[key]
                self._fill(slot, rec)
                break

    def bind(self, uid: str, node: str, devices: tuple[DeviceUse, ...]) -> None:
        slot = self.slots[uid]
        slot.bind_to, slot.devices = node, devices
        self._show(slot)
        self._send_bind(slot)

    def delete(self, uid: str) -> None:
        """The controller let go of a slot (a kill or an eviction): its pod goes; the workload's
        controller makes another, which fills a new slot."""
        slot = self.slots.get(uid)
        if slot is None:
            return
        pod = slot.pod
        self._drop(uid)
        if pod is not None and not pod.finished and not pod.deleting:
            body = bodies.delete_body(pod.uid)
            self.submit(
                Op("wl-delete-pod", uid, "DELETE", paths.pod(pod.namespace, pod.name), body, persistent=False)
            )

    def _drop(self, uid: str) -> None:
        slot = self.slots.pop(uid, None)
        self.status.pop(uid, None)
        if slot is None:
            return
        self.version += 1
        tw = self.runs.get(slot.manifest.job_uid)
        if tw is not None:
            tw.slots.pop(uid, None)
        if slot.pod is not None:
            self.by_pod.pop(slot.pod.key, None)

    def pending_binds(self) -> list[Slot]:
        return [
            s for s in self.slots.values() if s.bind_to is not None and (s.pod is None or s.pod.node is None)
        ]

    def matched(self) -> set[Key]:
        return set(self.by_pod)

    # ---- what the cluster says

    def on_pod(self, before: PodRecord | None, after: PodRecord | None) -> None:
        rec = after or before
        assert rec is not None
        if rec.ours:
            return  # a pod the agent made itself (a Volcano Job's)
        suid = self.by_pod.get(rec.key)
        slot = self.slots.get(suid) if suid is not None else None
        if slot is not None and slot.pod is not None and (after is None or after.uid != slot.pod.uid):
            self._empty(slot)  # its pod is gone (or another took its name)
            slot = None
        tw = self.runs.get(rec.job_uid)
        if after is None:
            if tw is not None:
                tw.loose.pop(rec.key, None)
            return
        if slot is not None:
            slot.pod = after
            self._show(slot)
            if slot.bind_to is not None and after.node is None and not slot.busy:
                self._send_bind(slot)
            return
        if tw is None or after.generation != tw.ref.generation or after.deleting or after.finished:
            return
        free = next((s for s in tw.slots.values() if self._fits(s, after)), None)
        if free is None:
            tw.loose[after.key] = after
            return
        tw.loose.pop(after.key, None)
        self._fill(free, after)

    def _fits(self, slot: Slot, rec: PodRecord) -> bool:
        if slot.pod is not None and slot.pod.phase != PodPhase.Failed:
            return False  # filled (a failed pod's slot takes its replacement)
        if slot.group >= 0 and rec.group != slot.group:
            return False  # each LWS group is placed whole where its gang was planned
        if slot.role:
            return slot.role == rec.role
        return slot.manifest.request == rec.request

    def _fill(self, slot: Slot, rec: PodRecord) -> None:
        if slot.pod is not None:
            self.by_pod.pop(slot.pod.key, None)
            slot.bind_to = None  # the replacement needs a place of its own
        slot.pod = rec
        self.by_pod[rec.key] = slot.manifest.uid
        self.version += 1
        self._show(slot)
        if rec.node is None and slot.bind_to is not None:
            self._send_bind(slot)

    def _empty(self, slot: Slot) -> None:
        assert slot.pod is not None
        self.by_pod.pop(slot.pod.key, None)
        slot.pod, slot.bind_to, slot.devices = None, None, ()
        self.version += 1
        self._show(slot)

    def _show(self, slot: Slot) -> None:
        rec, uid = slot.pod, slot.manifest.uid
        if rec is None:
            self.status[uid] = PodStatus(uid=uid, phase=PodPhase.Pending, node=slot.bind_to)
        else:
            self.status[uid] = PodStatus(
                uid=uid,
                phase=rec.phase,
                node=rec.node or slot.bind_to,
                exit_code=rec.exit_code,
                reason=rec.reason,
                cause=rec.cause,
                restarts=rec.restarts,
                name=rec.name,
                ip=rec.ip,
                checkpointed=rec.checkpointed,
            )

    def _send_bind(self, slot: Slot) -> None:
        rec = slot.pod
        if rec is None or slot.bind_to is None or rec.node is not None or slot.busy:
            return
        notes = self.bind_notes(slot.manifest, slot.bind_to, slot.devices)
        self.claim_hook(self.runs[slot.manifest.job_uid].job, rec, slot)  # DRA claims (the backend's)
        body = bodies.binding_body(rec.name, rec.uid, slot.bind_to, notes)
        slot.busy = True
        self.submit(Op("wl-bind", slot.manifest.uid, "POST", paths.binding(rec.namespace, rec.name), body))

    def on_object(self, before: WorkloadRecord | None, after: WorkloadRecord | None) -> None:
        rec = after or before
        assert rec is not None
        tw = self.runs.get(rec.job_uid)
        if tw is None or rec.generation != tw.ref.generation or rec.kind != tw.kind.kind:
            return
        if after is None:
            return
        tw.obj_uid = tw.obj_uid or after.uid
        if after.phase == tw.phase:
            return
        tw.phase = after.phase
        what = f"{tw.kind.kind} {rec.namespace}/{rec.name}"
        if after.phase == "Succeeded":
            self._problem(tw.ref.uid, "complete", "WorkloadSucceeded", f"{what} succeeded")
        elif after.phase == "Failed":
            self._problem(
                tw.ref.uid, "fail", "WorkloadFailed", f"{what} failed: {after.message or 'no reason given'}"
            )
        elif after.phase == "Running":
            self._problem(tw.ref.uid, "event", "WorkloadReady", f"{what} is ready")

    def on_outcome(self, out: Outcome) -> None:
        err = out.error
        if out.op.kind == "wl-create":
            self._created(out)
        elif out.op.kind == "wl-extra":
            self._extra_created(out)
        elif out.op.kind == "wl-patch":
            if err is not None and err.status not in (0, 404):
                self._refusal(out.op.key, err.rbac_rule() if err.status == 403 else err.message, "patch")
        elif out.op.kind == "wl-bind":
            slot = self.slots.get(out.op.key)
            if slot is not None:
                slot.busy = False
            if err is not None and err.status not in (0, 404, 409) and slot is not None:
                slot.bind_to, slot.devices = None, ()
                self._show(slot)
                self._refusal(
                    slot.manifest.job_uid, err.rbac_rule() if err.status == 403 else err.message, "bind"
                )
        elif err is not None and err.status not in (0, 404):
            job_uid = out.op.key.split("/", 1)[0]
            self._refusal(job_uid, err.rbac_rule() if err.status == 403 else err.message, "delete")

    def _created(self, out: Outcome) -> None:
        tw = self.runs.get(out.op.key)
        if tw is None:
            return
        found = out.result if out.ok else out.existing
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        if (
            found is not None
            and labels.get(JOB_UID_LABEL) == tw.ref.uid
            and labels.get("vglobal.io/generation") == str(tw.ref.generation)
        ):
            tw.obj_uid = str(found["metadata"].get("uid", ""))
            return
        err = out.error
        assert err is not None
        what = f"{tw.kind.kind} {tw.ref.namespace}/{tw.ref.name}"
        if out.existing is not None:
            if labels.get(JOB_UID_LABEL) is None:
                self._problem(
                    tw.ref.uid, "fail", "WorkloadTaken", f"{what} exists and was not made by vglobal"
                )
                return
            stale = str(out.existing["metadata"].get("uid", ""))  # an earlier run's: it goes first
            self.submit(
                Op("wl-delete", tw.ref.uid, "DELETE", out.op.fetch_on_conflict, bodies.delete_body(stale))
            )
            tw.retry_at = self.clock() + STALE_RETRY
        elif err.status == 404 and "namespaces" not in err.message:
            k = tw.kind
            why = f"cannot create {what}: cluster does not serve {k.api_version} {k.plural}: needs {k.needs}"
            self._problem(tw.ref.uid, "reject", "KindNotServed", why)
        elif err.status == 403:
            self._problem(
                tw.ref.uid,
                "event",
                "Forbidden",
                f"cannot create {what}: the agent's RBAC lacks {err.rbac_rule()}",
            )
            tw.retry_at = self.clock() + 30.0
        elif err.status in (400, 404, 409, 422):
            self._problem(
                tw.ref.uid,
                "fail",
                "Invalid" if err.status == 422 else err.reason,
                f"cannot create {what}: {err.message}",
            )
        else:
            tw.retry_at = self.clock() + STALE_RETRY

    def _extra_created(self, out: Outcome) -> None:
        tw = self.runs.get(out.op.key)
        if tw is None or out.ok:
            return
        labels = ((out.existing or {}).get("metadata") or {}).get("labels") or {}
        what = f"{out.op.body.get('kind', 'object')} {tw.ref.namespace}/{out.op.body['metadata']['name']}"
        if out.existing is not None and labels.get(JOB_UID_LABEL) == tw.ref.uid:
            if labels.get("vglobal.io/generation") != str(tw.ref.generation):  # an earlier run's
                stale = str(out.existing["metadata"].get("uid", ""))
                item = out.op.fetch_on_conflict
                self.submit(Op("wl-delete", tw.ref.uid, "DELETE", item, bodies.delete_body(stale)))
                tw.extras_due.append(out.op.extra)
                tw.retry_at = self.clock() + STALE_RETRY
            return
        err = out.error
        if out.existing is not None:
            self._problem(tw.ref.uid, "fail", "WorkloadTaken", f"{what} exists and was not made by vglobal")
        elif err is not None and err.status in (400, 403, 404, 422):
            self._problem(tw.ref.uid, "fail", "Invalid", f"cannot create {what}: {err.message}")
        else:
            tw.extras_due.append(out.op.extra)
            tw.retry_at = self.clock() + STALE_RETRY

    def tick(self, now: float) -> None:
        for tw in self.runs.values():
            if tw.retry_at is not None and tw.retry_at <= now and tw.owner_uid:
                tw.retry_at = None
                if tw.extras_due:
                    due, tw.extras_due = tw.extras_due, []
                    for extra in due:
                        self._create_extra(tw, extra)
                else:
                    self._create(tw)

    def _refusal(self, job_uid: str, why: str, what: str) -> None:
        self._problem(job_uid, "event", "ApiError", f"cannot {what} a pod of the workload: {why}")

    def _problem(self, job_uid: str, action: str, reason: str, message: str) -> None:
        if action != "event":
            log.info("job %s: %s: %s", job_uid, reason, message)
        self.problems.append(JobProblem(job_uid, action, reason, message))

    def take_problems(self) -> list[JobProblem]:
        out, self.problems = self.problems, []
        return out


def slot_group(tw: TrackedWorkload, pod: PodManifest) -> int:
    """The group placed whole a slot waits for a pod of (a LeaderWorkerSet's; -1: any)."""
    return tw.kind.group_of(tw.roles.get(pod.task, ""), pod.index, tw.job.raw)


def status_with_node(status: PodStatus, node: str | None) -> PodStatus:
    return replace(status, node=node)
