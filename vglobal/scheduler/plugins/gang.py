"""gang: all-or-nothing scheduling of a job's minAvailable (and per-role minTaskMember) tasks."""

from __future__ import annotations

from collections.abc import Sequence

from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.framework import PERMIT, REJECT, Plugin
from vglobal.scheduler.info import JobInfo, TaskInfo
from vglobal.scheduler.session import Session

_VALID_STATUSES = (
    TaskStatus.Allocated,
    TaskStatus.Binding,
    TaskStatus.Bound,
    TaskStatus.Running,
    TaskStatus.Succeeded,
    TaskStatus.Pipelined,
    TaskStatus.Pending,
)


def _check_roles(job: JobInfo) -> bool:
    """Volcano skips the per-role check when minAvailable < the sum of minTaskMember."""
    return job.min_available >= sum(job.task_min_available.values())


def valid_task_num(job: JobInfo) -> int:
    return job.count(*_VALID_STATUSES)


def job_valid(job: JobInfo) -> str | None:
    if _check_roles(job):
        for role, minimum in job.task_min_available.items():
            c = job.role_counts[role]
            have = sum(c[s] for s in _VALID_STATUSES)
            if have < minimum:
                return f"task {role} has {have} valid tasks, fewer than its minAvailable {minimum}"
    have = valid_task_num(job)
    if have < job.min_available:
        return f"not enough valid tasks for gang-scheduling, valid: {have}, min: {job.min_available}"
    if job.sub_jobs:
        # CheckSubJobValid: each policy needs at least minSubGroups subgroups with pods at all
        groups = job.sub_jobs.count(False)
        for gid, minimum in sorted(job.sub_jobs.min_groups.items()):
            if groups.get(gid, 0) < minimum:
                return (
                    f"subgroup policy {gid} has {groups.get(gid, 0)} subgroups, "
                    f"fewer than its minSubGroups {minimum}"
                )
    return None


def _roles_ready(job: JobInfo, with_waiting: bool) -> bool:
    if not _check_roles(job):
        return True
    for role, minimum in job.task_min_available.items():
        have = job.role_ready(role)
        if with_waiting:
            have += job.role_counts[role][TaskStatus.Pipelined]
        if have < minimum:
            # Pending BestEffort tasks of the role also count (they need no resources).
            have += sum(
                1
                for t in job.by_status.get(TaskStatus.Pending, {}).values()
                if t.role == role and t.best_effort
            )
            if have < minimum:
                return False
    return True


def job_ready(job: JobInfo) -> bool:
    if job.ready_task_num() + job.pending_best_effort_num() < job.min_available:
        return False
    if job.sub_jobs and job.sub_jobs.short_policies():
        return False
    return _roles_ready(job, with_waiting=False)


def job_pipelined(job: JobInfo) -> bool:
    if job.ready_task_num() + job.waiting_task_num() + job.pending_best_effort_num() < job.min_available:
        return False
    if job.sub_jobs and job.sub_jobs.short_policies(pipelined=True):
        return False
    return _roles_ready(job, with_waiting=True)


def job_starving(job: JobInfo) -> bool:
    return job.waiting_task_num() + job.ready_task_num() < job.min_available


class GangPlugin(Plugin[Session]):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_job_valid_fn(self.name, job_valid)

        def victims(_: TaskInfo, preemptees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], int]:
            occupied: dict[str, int] = {}
            out = []
            for t in preemptees:
                job = t.job
                left = occupied.get(job.uid, job.ready_task_num())
                if left > job.min_available:
                    occupied[job.uid] = left - 1
                    out.append(t)
                else:
                    occupied[job.uid] = left
            return out, PERMIT

        ssn.add_preemptable_fn(self.name, victims)
        ssn.add_reclaimable_fn(self.name, victims)

        def order(left: JobInfo, right: JobInfo) -> int:
            lr, rr = job_ready(left), job_ready(right)
            if lr == rr:
                return 0
            return 1 if lr else -1

        ssn.add_job_order_fn(self.name, order)
        ssn.add_job_ready_fn(self.name, job_ready)
        ssn.add_job_pipelined_fn(self.name, lambda j: PERMIT if job_pipelined(j) else REJECT)
        ssn.add_job_starving_fn(self.name, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        """Unready jobs get the Unschedulable condition when Pending or when a task hit fit errors;
        an Inqueue gang that is merely waiting does not (Volcano's gang_test). Every unready job gets
        a human-readable reason either way."""
        for job in ssn.jobs.values():
            if not job.tasks or job_ready(job):
                continue
            unready = job.min_available - job.ready_task_num()
            if unready <= 0:
                continue
            job.unschedulable = job.is_pending() or bool(job.nodes_fit_errors)
            job.job_fit_error = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {_fit_error(job)}"
            if job.is_pending():
                ssn.reasons.setdefault(job.uid, job.job_fit_error)
            else:
                ssn.reasons[job.uid] = job.job_fit_error


def _fit_error(job: JobInfo) -> str:
    statuses = ", ".join(
        f"{len(tasks)} {status}"
        for status, tasks in sorted(job.by_status.items(), key=lambda kv: str(kv[0]))
        if tasks
    )
    msg = f"pod group is not ready, {statuses}, {job.min_available} minAvailable"
    if job.sub_jobs:
        for gid, ready, minimum in job.sub_jobs.short_policies():
            msg += f"; {ready} of the {minimum} subgroups subgroup policy {gid} needs are ready"
    errors = sorted(set(job.nodes_fit_errors.values()))
    if job.quota_note:
        errors.insert(0, job.quota_note)
    if errors:
        msg += "; " + "; ".join(errors)
    return msg
