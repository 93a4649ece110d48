"""Volcano's job state machine (``controllers/job/state``): what each action does in each phase.

The functions change the run and ask a ``PodOps`` to create or delete pods. Pod deletion is
immediate in the sim (no Terminating pods); the controller follows an action with SyncJob until
the phase settles, as Volcano's controller does when the pod deletions come back as events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from vglobal.agent.pods import FINISHED_POD_PHASES, PodPhase
from vglobal.agent.policies import SYNC_JOB, Request
from vglobal.agent.run import JobRun
from vglobal.model.partition import partition_id
from vglobal.model.phases import JobPhase

P = JobPhase
TARGETED_RESTARTS = frozenset({"RestartTask", "RestartPod", "RestartPartition"})
ACTIVE = (PodPhase.Pending, PodPhase.Running)


class PodOps(Protocol):
    def create_missing(self, run: JobRun) -> None: ...

    def kill(self, run: JobRun, names: Iterable[str], *, keep_finished: bool) -> None: ...

    def to_phase(self, run: JobRun, phase: JobPhase, *, retry: bool = False) -> None: ...


def _kill_job(ops: PodOps, run: JobRun, *, keep_finished: bool) -> None:
    ops.kill(run, list(run.pods), keep_finished=keep_finished)


def _partition_pods(run: JobRun, task_name: str, pod: str) -> list[str] | None:
    """The pods of ``pod``'s partition (same task, same ``volcano.sh/partition-id``); None if its
    task has no partitionPolicy. An evicted pod is already gone from the run: its index is read
    from its name, ``<job>-<task>-<index>``."""
    task = next((t for t in run.job.tasks if t.name == task_name), None)
    if task is None or task.partition_policy is None:
        return None
    prefix = f"{run.job.name}-{task.name}-"
    manifest = run.pods.get(pod)
    if manifest is not None:
        index = manifest.index
    elif pod.startswith(prefix) and pod[len(prefix) :].isdigit():
        index = int(pod[len(prefix) :])
    else:
        return None
    policy = task.partition_policy
    mine = partition_id(index, policy)
    return [n for n, p in run.pods.items() if p.task == task.name and partition_id(p.index, policy) == mine]


def _kill_target(ops: PodOps, run: JobRun, action: str, req: Request) -> None:
    """RestartPod kills the event's pod, RestartPartition the pods of its partition, RestartTask
    (and RestartPartition of a task without partitions) its task's pods."""
    partition = None
    if action == "RestartPartition" and req.pod is not None and req.task is not None:
        partition = _partition_pods(run, req.task, req.pod)
    if action == "RestartPod" and req.pod is not None:
        names = [req.pod]
    elif partition is not None:
        names = partition
    elif req.task is not None:
        names = [n for n, p in run.pods.items() if p.task == req.task]
    else:  # a job-level event has no narrower target than the job
        names = list(run.pods)
    ops.kill(run, names, keep_finished=False)


def _pending_sync(ops: PodOps, run: JobRun) -> None:
    done = run.count(PodPhase.Running, PodPhase.Succeeded, PodPhase.Failed)
    if run.job.min_available <= done:
        ops.to_phase(run, P.Running)


def _running_sync(ops: PodOps, run: JobRun) -> None:
    job = run.job
    replicas = job.total_pods()
    if replicas == 0:
        return
    succeeded = run.count(PodPhase.Succeeded)
    failed = run.count(PodPhase.Failed)
    if job.min_success is not None and succeeded >= job.min_success:
        ops.to_phase(run, P.Completed)
        return
    if succeeded + failed == replicas:
        if job.min_available >= sum(t.min_available for t in job.tasks):
            for t in job.tasks:
                if run.count(PodPhase.Succeeded, task=t.name) < t.min_available:
                    ops.to_phase(run, P.Failed)
                    return
        if job.min_success is not None and succeeded < job.min_success:
            ops.to_phase(run, P.Failed)
        elif succeeded >= job.min_available:
            ops.to_phase(run, P.Completed)
        else:
            ops.to_phase(run, P.Failed)
        return
    if run.count(PodPhase.Pending) > replicas - job.min_available:
        ops.to_phase(run, P.Pending)


def _restarting_sync(ops: PodOps, run: JobRun) -> None:
    if run.retry_count >= run.job.max_retry:
        ops.to_phase(run, P.Failed)
    elif run.job.total_pods() >= run.job.min_available:  # nothing is left Terminating in the sim
        ops.to_phase(run, P.Pending)


def _alive(run: JobRun) -> int:
    return run.count(*ACTIVE)


def execute(ops: PodOps, run: JobRun, action: str, req: Request) -> None:
    """Apply ``action`` in the run's current phase (one state's ``Execute``)."""
    phase = run.phase
    if phase in (P.Pending, P.Running):
        if action == "RestartJob":
            _kill_job(ops, run, keep_finished=False)
            ops.to_phase(run, P.Restarting, retry=True)
        elif action in TARGETED_RESTARTS:
            _kill_target(ops, run, action, req)
            ops.to_phase(run, P.Restarting, retry=True)
        elif action == "AbortJob":
            _kill_job(ops, run, keep_finished=True)
            ops.to_phase(run, P.Aborting)
        elif action == "TerminateJob":
            _kill_job(ops, run, keep_finished=True)
            ops.to_phase(run, P.Terminating)
        elif action == "CompleteJob":
            _kill_job(ops, run, keep_finished=True)
            ops.to_phase(run, P.Completing)
        else:
            ops.create_missing(run)
            (_pending_sync if phase == P.Pending else _running_sync)(ops, run)
    elif phase == P.Restarting:
        if action in TARGETED_RESTARTS:
            _kill_target(ops, run, action, req)
        elif action != SYNC_JOB:
            _kill_job(ops, run, keep_finished=False)
        _restarting_sync(ops, run)
    elif phase in (P.Aborting, P.Aborted):
        _kill_job(ops, run, keep_finished=True)
        if action == "ResumeJob":
            ops.to_phase(run, P.Restarting, retry=True)
        elif phase == P.Aborting and _alive(run) == 0:
            ops.to_phase(run, P.Aborted)
    elif phase in (P.Completing, P.Terminating):
        _kill_job(ops, run, keep_finished=True)
        if _alive(run) == 0:
            ops.to_phase(run, P.Completed if phase == P.Completing else P.Terminated)
    else:  # Completed, Terminated, Failed: only make sure nothing keeps running
        _kill_job(ops, run, keep_finished=True)


def finished_pod(phase: PodPhase) -> bool:
    return phase in FINISHED_POD_PHASES
