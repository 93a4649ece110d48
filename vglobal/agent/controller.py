"""The job controller: creates each task's pods, watches them and applies the job's policies.

It is driven, never threaded: ``start`` / ``abort`` / ``sync`` are called by the cluster runtime
with the backend's current view, so the agent daemon and ``sim run`` share one code path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from vglobal.agent import deadlines, lifecycle
from vglobal.agent.backends.base import Backend, DependencyObject, RunStart
from vglobal.agent.job_plugins import apply_pod_plugins, job_objects, pod_name
from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.agent.policies import SYNC_JOB, Request, decide
from vglobal.agent.run import AdoptedRun, Delayed, JobRun
from vglobal.clock import Clock
from vglobal.model.job import SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION, Job, Task
from vglobal.model.partition import GROUP_INDEX_LABEL, PARTITION_ID_LABEL, group_index, partition_id
from vglobal.model.phases import JobPhase
from vglobal.model.preemptable import PREEMPTABLE_KEY
from vglobal.model.tree_copy import copy_tree
from vglobal.model.workloads import long_running

log = logging.getLogger(__name__)

_SETTLE_ROUNDS = 6  # enough for Running -> Restarting -> Pending -> Running chains in one step
_WARNING_EVENTS = frozenset({"PodFailed", "PodEvicted", "TaskFailed", "Unknown"})


class JobController:
    def __init__(self, backend: Backend, clock: Clock) -> None:
        self.backend = backend
        self.clock = clock
        self.runs: dict[str, JobRun] = {}
        self._seq = 0

    # ---- commands from the agent

    def start(
        self,
        uid: str,
        generation: int,
        job: Job,
        *,
        queue: str = "",
        priority: int = 0,
        dependencies: tuple[DependencyObject, ...] = (),
    ) -> JobRun:
        """Create the run and its pods; ValueError if the job cannot be run here (plugin errors)."""
        if uid in self.runs:
            raise ValueError(f"job {uid} already has a run")
        objects = job_objects(job)
        for t in job.tasks:  # fail before any pod exists, so a rejection leaves nothing behind
            if t.replicas:
                self.pod_object(job, t, 0, version=0)
        self.backend.job_started(
            RunStart(uid, generation, job, queue or job.queue, priority, objects, dependencies)
        )
        self._seq += 1
        now = self.clock.now()
        run = JobRun(uid, generation, job, queue or job.queue, priority, self._seq, now, objects=objects)
        self.runs[uid] = run
        run.event("Normal", "JobPending", f"accepted generation {generation}", now)
        self._execute(run, SYNC_JOB, Request("OutOfSync"))
        self._settle(run)
        return run

    def respecify(self, run: JobRun, job: Job) -> None:
        """The run carries out ``job`` from now on (new replicas, labels, annotations): pods past a
        task's new replicas are deleted, missing ones created by the next sync."""
        wanted = {t.name: t.replicas for t in job.tasks}
        surplus = [n for n, m in run.pods.items() if m.index >= wanted.get(m.task, 0)]
        run.job = job
        self.kill(run, surplus, keep_finished=False)
        self.backend.job_respecified(run.uid, job)
        run.event("Normal", "Configured", f"replicas {job.total_pods()}", self.clock.now())
        self._settle(run)

    def remove(self, uid: str) -> JobRun | None:
        """Drop a run and all its pods without a final phase (replaced or rejected)."""
        run = self.runs.pop(uid, None)
        if run is not None:
            self.kill(run, list(run.pods), keep_finished=False)
            self.backend.job_removed(uid)
        return run

    def adopt(self, found: AdoptedRun) -> JobRun:
        """Take over a run found in the cluster (an agent restart): its pods as they are, its
        restarts counted from the pods' job version, the rest settled from what they show."""
        job = found.job
        self._seq += 1
        now = self.clock.now()
        queue = found.queue or job.queue
        run = JobRun(
            found.uid, found.generation, job, queue, found.priority, self._seq, now, objects=job_objects(job)
        )
        run.version = run.retry_count = found.version
        run.incarnations = found.incarnations
        for manifest, status in found.pods:
            run.pods[manifest.name] = manifest
            run.status[manifest.name] = status
            if status.phase not in deadlines.STARTED:  # its policy deadline, read back from the pod
                for d in deadlines.of_object(manifest.obj):
                    if d.version == run.version:
                        run.delayed = deadlines.add(run.delayed, d)
        run.started = any(st.phase != PodPhase.Pending for st in run.status.values())
        saved = [st.checkpointed for st in run.status.values() if st.checkpointed]
        run.checkpointed = max(saved, default=None)
        self.runs[found.uid] = run
        run.event(
            "Normal", "Recovered", f"resumed generation {found.generation} with {len(found.pods)} pods", now
        )
        self._settle(run)
        return run

    def fail(self, uid: str, reason: str, message: str) -> None:
        """The cluster refused the job's objects for good: it fails with the server's message."""
        run = self.runs.get(uid)
        if run is None or run.finished:
            return
        run.event("Warning", reason, message, self.clock.now())
        self.kill(run, list(run.pods), keep_finished=True)
        self.to_phase(run, JobPhase.Failed)

    def complete(self, uid: str, reason: str, message: str) -> None:
        """The workload object says its run succeeded (a RayJob whose Ray cluster keeps running):
        CompleteJob, so what still runs is stopped and the run ends Completed."""
        run = self.runs.get(uid)
        if run is None or run.finished:
            return
        run.event("Normal", reason, message, self.clock.now())
        self._execute(run, "CompleteJob", Request("CommandIssued"))
        self._settle(run)

    def purge(self, uid: str) -> None:
        """Delete every pod of a stopped run, finished ones too, and what the backend made for it."""
        run = self.runs.get(uid)
        if run is not None:
            self.kill(run, list(run.pods), keep_finished=False)
            self.backend.job_removed(uid)

    def abort(self, uid: str, reason: str, message: str) -> JobRun | None:
        """Cancel / reclaim: AbortJob, so the run ends Aborted with its finished pods kept."""
        run = self.runs.get(uid)
        if run is None or run.finished:
            return run
        run.event("Warning", reason, message, self.clock.now())
        self._execute(run, "AbortJob", Request("CommandIssued"))
        self._settle(run)
        return run

    def evict(self, uid: str, pod_uids: Iterable[str], reason: str) -> list[str]:
        """The hub evicts these pods of the run (preemption): each goes, and the job's PodEvicted
        policies apply as to any eviction. A uid the run no longer has is passed over (evicted
        already, or replaced by a new incarnation). Returns the names of the pods evicted."""
        run = self.runs.get(uid)
        if run is None or run.finished:
            return []
        wanted = set(pod_uids)
        now = self.clock.now()
        out: list[str] = []
        for name, manifest in list(run.pods.items()):
            if run.pods.get(name) is not manifest:
                continue  # an earlier eviction's policy removed or replaced it (RestartJob, say)
            if manifest.uid not in wanted or lifecycle.finished_pod(run.status[name].phase):
                continue
            self.backend.delete_pod(manifest.uid)
            del run.pods[name], run.status[name]
            run.pipelined.pop(manifest.uid, None)
            run.dirty = True
            out.append(name)
            self._handle(run, Request("PodEvicted", manifest.task, name, manifest.uid, reason=reason), now)
        run.held.update(out)
        self._settle(run)
        return out

    # ---- the reconcile step

    def sync(self) -> None:
        """Observe every run's pods, raise events, apply policies and due delayed actions."""
        pods = self.backend.pods()
        now = self.clock.now()
        # A finished run is settled for good: what its pods do after the end changes nothing the
        # hub is told (and an agent keeps thousands of them for a while after they end).
        for run in sorted((r for r in self.runs.values() if not r.finished), key=lambda r: r.seq):
            for req in self._observe(run, pods):
                self._handle(run, req, now)
            self._fire_delayed(run, now)
            self._settle(run)

    def podgroup_changed(self, run: JobRun, phase: str) -> None:
        """The scheduler's PodGroup phase; Unknown (part running, rest unschedulable) is an event."""
        if phase == run.podgroup_phase:
            return
        run.podgroup_phase = phase  # the hub is not told: a job's status does not carry it
        if phase == "Unknown" and not run.finished:
            self._handle(run, Request("Unknown"), self.clock.now())
            self._settle(run)

    def next_event_time(self) -> float | None:
        dues = [d.due for run in self.runs.values() for d in run.delayed]
        return min(dues) if dues else None

    # ---- internals

    def _observe(self, run: JobRun, pods: Mapping[str, PodStatus]) -> list[Request]:
        reqs: list[Request] = []
        for name in list(run.pods):
            manifest = run.pods[name]
            before = run.status[name]
            now_status = pods.get(manifest.uid)
            if now_status is None:  # deleted by someone else: the scheduler evicted it
                del run.pods[name], run.status[name]
                run.pipelined.pop(manifest.uid, None)
                reqs.append(Request("PodEvicted", manifest.task, name, manifest.uid))
                continue
            if now_status is before:
                continue
            if now_status == before:
                # the backend made an equal copy: keep it, so the next step's check is identity
                run.status[name] = now_status
                continue
            run.status[name] = now_status
            run.dirty = True
            if now_status.checkpointed is not None and now_status.checkpointed > (run.checkpointed or 0.0):
                run.checkpointed = now_status.checkpointed  # the job's latest, whichever pod says it
            if now_status.cause != before.cause and now_status.cause and now_status.phase != PodPhase.Failed:
                # the cluster says why the pod does not run as it should: the job's owner sees it
                why = now_status.cause.split(":", 1)[0].split(",", 1)[0]
                run.event("Warning", why, f"pod {name}: {now_status.cause}", self.clock.now())
            if now_status.phase in deadlines.STARTED and run.delayed:
                run.delayed = deadlines.started(run.delayed, name)
            if now_status.phase == PodPhase.Failed and before.phase != PodPhase.Failed:
                # a kubelet's node-pressure eviction is an eviction (Volcano raises PodFailed for it)
                event = "PodEvicted" if now_status.reason == "Evicted" else "PodFailed"
                reqs.append(
                    Request(event, manifest.task, name, manifest.uid, now_status.exit_code, now_status.reason)
                )
            elif now_status.phase == PodPhase.Succeeded and before.phase != PodPhase.Succeeded:
                task = self._task(run, manifest.task)
                if run.count(PodPhase.Succeeded, task=task.name) >= task.replicas:
                    reqs.append(Request("TaskCompleted", task.name, name, manifest.uid))
        return reqs

    @staticmethod
    def _task(run: JobRun, name: str) -> Task:
        return next(t for t in run.job.tasks if t.name == name)

    def _stale(self, run: JobRun, req: Request) -> bool:
        """A request about a pod the run no longer has (killed by an earlier action) only syncs."""
        return (
            req.pod is not None
            and req.event not in ("PodEvicted", "TaskCompleted")
            and (req.pod not in run.pods or run.pods[req.pod].uid != req.pod_uid)
        )

    def _handle(self, run: JobRun, req: Request, now: float) -> None:
        why = f" ({req.reason})" if req.reason else ""
        if req.event == "PodFailed":
            run.event(
                "Warning", "PodFailed", f"pod {req.pod} failed with exit code {req.exit_code}{why}", now
            )
        elif req.event == "PodEvicted":
            run.event("Warning", "PodEvicted", f"pod {req.pod} was evicted{why}", now)
        elif req.event == "TaskCompleted":
            run.event("Normal", "TaskCompleted", f"task {req.task} completed", now)
        elif req.event == "Unknown":
            run.event("Warning", "Unknown", "some pods run while the rest cannot be scheduled", now)
        if run.finished or self._stale(run, req):
            return
        decision = decide(run.job, req)
        if decision.action == SYNC_JOB and req.event == "PodFailed" and self._task_failed(run, req):
            # The sim never restarts containers in place, so a task fails when its failed pods
            # leave it unable to reach its minAvailable.
            failed = Request("TaskFailed", req.task)
            run.event("Warning", "TaskFailed", f"task {req.task} cannot reach its minAvailable", now)
            decision, req = decide(run.job, failed), failed
        if decision.action == SYNC_JOB:
            return
        if decision.timeout:
            later = Delayed(now + decision.timeout, run.version, req, decision.action)
            run.delayed = deadlines.add(run.delayed, later)
            return
        self._apply(run, decision.action, req, now)

    def _task_failed(self, run: JobRun, req: Request) -> bool:
        if req.task is None:
            return False
        task = self._task(run, req.task)
        if (task.name, run.version) in run.failed_tasks:
            return False  # raised once per task and run version, not once per later failure
        if run.count(PodPhase.Failed, task=task.name) <= task.replicas - task.min_available:
            return False
        run.failed_tasks.add((task.name, run.version))
        return True

    def _apply(self, run: JobRun, action: str, req: Request, now: float) -> None:
        target = f"pod {req.pod}" if req.pod else f"task {req.task}" if req.task else "the job"
        run.event("Normal", action, f"{req.event} on {target}: {action}", now)
        log.info(
            "job %s/%s gen %d: %s on %s -> %s",
            run.job.namespace,
            run.job.name,
            run.generation,
            req.event,
            target,
            action,
        )
        self._execute(run, action, req)

    def _fire_delayed(self, run: JobRun, now: float) -> None:
        if not run.delayed:
            return
        due, run.delayed = deadlines.due(run.delayed, now)
        for d in due:
            if d.version != run.version or run.finished:
                continue
            req = d.request
            if deadlines.carried(d):
                pass  # kept across the pod's replacements; a replacement that ran cancelled it
            elif req.pod is not None and (req.pod not in run.pods or run.pods[req.pod].uid != req.pod_uid):
                continue
            if (
                req.event == "PodPending"
                and req.pod is not None
                and run.phase_of(req.pod) != PodPhase.Pending
            ):
                continue  # it started meanwhile: the pending timeout no longer applies
            self._apply(run, d.action, req, now)

    def _settle(self, run: JobRun) -> None:
        for _ in range(_SETTLE_ROUNDS):
            before = (run.phase, run.retry_count, len(run.pods))
            self._execute(run, SYNC_JOB, Request("OutOfSync"))
            if (run.phase, run.retry_count, len(run.pods)) == before:
                return

    def _execute(self, run: JobRun, action: str, req: Request) -> None:
        lifecycle.execute(self, run, action, req)

    # ---- PodOps for the lifecycle

    def create_missing(self, run: JobRun) -> None:
        if len(run.pods) == run.job.total_pods():
            return  # every replica has its pod (the common case, checked every sync)
        now = self.clock.now()
        for task in run.job.tasks:
            for index in range(task.replicas):
                name = pod_name(run.job.name, task.name, index)
                if name in run.pods:
                    continue
                run.incarnations += 1
                obj = self.pod_object(run.job, task, index, version=run.version)
                waiting = deadlines.for_pod(run.delayed, name)
                if waiting:  # the replacement carries its pod name's deadline (agent restarts)
                    obj["metadata"]["annotations"][deadlines.DEADLINE_ANNOTATION] = deadlines.encode(waiting)
                uid = f"{run.uid}/{run.generation}/{name}/{run.incarnations}"
                manifest = PodManifest(
                    uid, name, run.job.namespace, run.uid, task.name, index, task.request_of(index), obj
                )
                self.backend.create_pod(manifest)
                run.pods[name] = manifest
                run.status[name] = PodStatus(uid=uid, phase=PodPhase.Pending)
                run.dirty = True
                pending = Request("PodPending", task.name, name, uid)
                decision = decide(run.job, pending)
                if decision.action != SYNC_JOB and decision.timeout:
                    run.delayed.append(Delayed(now + decision.timeout, run.version, pending, decision.action))

    def kill(self, run: JobRun, names: Iterable[str], *, keep_finished: bool) -> None:
        for name in names:
            manifest = run.pods.get(name)
            if manifest is None:
                continue
            if keep_finished and lifecycle.finished_pod(run.status[name].phase):
                continue
            self.backend.delete_pod(manifest.uid)
            del run.pods[name], run.status[name]
            run.pipelined.pop(manifest.uid, None)
            run.dirty = True

    def to_phase(self, run: JobRun, phase: JobPhase, *, retry: bool = False) -> None:
        now = self.clock.now()
        if retry:
            run.retry_count += 1
            run.version += 1
            run.delayed.clear()
        if phase == run.phase and not retry:
            return
        old, run.phase = run.phase, phase
        run.dirty = True
        if phase == JobPhase.Running:
            run.started = True
        if run.finished:
            run.finished_at = now
            run.delayed.clear()
            failure = run.pod_failure() if phase == JobPhase.Failed else ""
            if failure:  # the job's reason at the hub names the pod and what the cluster said
                run.message = f"Failed: {failure}"
        suffix = f" (retry {run.retry_count}/{run.job.max_retry})" if retry else ""
        run.event(
            "Warning" if phase == JobPhase.Failed else "Normal",
            f"Job{phase}",
            f"{old} -> {phase}{suffix}",
            now,
        )
        log.info(
            "job %s/%s gen %d: %s -> %s%s",
            run.job.namespace,
            run.job.name,
            run.generation,
            old,
            phase,
            suffix,
        )

    @staticmethod
    def pod_object(job: Job, task: Task, index: int, *, version: int) -> dict[str, Any]:
        obj: dict[str, Any] = copy_tree(task.template) or {}
        meta = obj.setdefault("metadata", {})
        name = pod_name(job.name, task.name, index)
        meta["name"], meta["namespace"] = name, job.namespace
        labels = meta.setdefault("labels", {})
        labels.update(
            {
                "volcano.sh/job-name": job.name,
                "volcano.sh/job-namespace": job.namespace,
                "volcano.sh/task-spec": task.name,
                "volcano.sh/task-index": str(index),
            }
        )
        if task.partition_policy is not None:
            labels[PARTITION_ID_LABEL] = str(partition_id(index, task.partition_policy))
        if task.group_pods > 0:
            labels[GROUP_INDEX_LABEL] = str(group_index(index, task.group_pods))
        annotations = meta.setdefault("annotations", {})
        annotations.update(
            {
                "scheduling.k8s.io/group-name": job.name,
                "volcano.sh/job-name": job.name,
                "volcano.sh/task-spec": task.name,
                "volcano.sh/task-index": str(index),
                "volcano.sh/job-version": str(version),
                "volcano.sh/queue-name": job.queue,
            }
        )
        for key in (SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION):
            if key not in annotations and key in job.annotations:
                annotations[key] = job.annotations[key]
        no_flag = PREEMPTABLE_KEY not in annotations and PREEMPTABLE_KEY not in labels
        if no_flag and long_running(job.raw.get("apiVersion"), job.raw.get("kind")):
            # A kind that holds its pods until deleted gives them up only if it says so.
            said = job.annotations.get(PREEMPTABLE_KEY, job.labels.get(PREEMPTABLE_KEY))
            annotations[PREEMPTABLE_KEY] = said if said is not None else "false"
        spec = obj.setdefault("spec", {})
        if job.scheduler_name:
            spec.setdefault("schedulerName", job.scheduler_name)
        apply_pod_plugins(obj, job, task.name, index)
        return obj
