"""One look at a CronJob: what to create, cancel and delete now, and its new status.

A pure function of the CronJob, its status, its runs and ``now``; the hub applies the actions
in order, creating runs under a unique job name so a scheduled time runs at most once even
when two leaders decide the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from vglobal.model.cronjob import ConcurrencyPolicy, CronJob, run_job, run_name
from vglobal.model.job import Job
from vglobal.model.phases import FAILED_JOB_PHASES, JobPhase, is_finished
from vglobal.model.workflow_status import CronStatus
from vglobal.workflows.cron_due import DueRuns, due_runs

__all__ = [
    "CancelRun",
    "CreateRun",
    "CronAction",
    "CronDecision",
    "CronRun",
    "DeleteRun",
    "MissedRuns",
    "SkipRun",
    "decide_cron",
]

@dataclass(frozen=True, kw_only=True)
class CronRun:
    """A Job this CronJob made, as the hub sees it now."""

    name: str
    phase: str
    created: datetime
    finished: datetime | None = None  # when it reached a finished phase


@dataclass(frozen=True, kw_only=True)
class CreateRun:
    name: str
    scheduled_time: datetime
    job: Job  # the run's Job, ready to store
    reason: str = "SuccessfulCreate"


@dataclass(frozen=True, kw_only=True)
class CancelRun:
    """``Replace``: stop a run still active when the next one is due."""

    name: str
    reason: str = "ReplaceConcurrent"


@dataclass(frozen=True, kw_only=True)
class DeleteRun:
    """A finished run beyond its history limit (the oldest go first)."""

    name: str
    reason: str = "SuccessfulDelete"


@dataclass(frozen=True, kw_only=True)
class SkipRun:
    """``Forbid``: a due run not started while another is active; it stays due."""

    scheduled_time: datetime
    active: tuple[str, ...]
    reason: str = "JobAlreadyActive"


@dataclass(frozen=True, kw_only=True)
class MissedRuns:
    """Scheduled times that will never run; ``latest`` is given up as past the deadline."""

    count: int  # 101 means more than 100
    latest: datetime | None = None
    too_many: bool = False
    reason: str = "MissSchedule"

    @property
    def message(self) -> str:
        count = "more than 100" if self.count > 100 else str(self.count)
        text = f"missed {count} scheduled run{'s' if self.count != 1 else ''}"
        if self.latest is not None:
            latest = f"{self.latest.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
            text += f"; the latest, {latest}, is past startingDeadlineSeconds"
        if self.too_many:
            text += (
                "; too many missed start times: set or lower spec.startingDeadlineSeconds, or check the clock"
            )
        return text


CronAction = CreateRun | CancelRun | DeleteRun | SkipRun | MissedRuns


@dataclass(frozen=True, kw_only=True)
class CronDecision:
    actions: tuple[CronAction, ...]
    status: CronStatus
    next_time: datetime | None  # when to look again for the schedule; None while suspended


def _oldest_beyond(runs: list[CronRun], limit: int) -> list[CronRun]:
    ordered = sorted(runs, key=lambda r: (r.created, r.name))
    return ordered[: max(len(ordered) - limit, 0)]


def _history(cron: CronJob, runs: Sequence[CronRun]) -> list[DeleteRun]:
    succeeded = [r for r in runs if r.phase == JobPhase.Completed]
    failed = [r for r in runs if r.phase in FAILED_JOB_PHASES]
    old = _oldest_beyond(succeeded, cron.successful_jobs_history_limit)
    old += _oldest_beyond(failed, cron.failed_jobs_history_limit)
    return [DeleteRun(name=r.name) for r in sorted(old, key=lambda r: (r.created, r.name))]


def _observed(status: CronStatus, runs: Sequence[CronRun]) -> CronStatus:
    """The status the runs show: who is active, when one last succeeded."""
    active = sorted((r for r in runs if not is_finished(r.phase)), key=lambda r: (r.created, r.name))
    successes = [r.finished for r in runs if r.phase == JobPhase.Completed and r.finished is not None]
    if status.last_successful_time is not None:
        successes.append(status.last_successful_time)
    return replace(
        status,
        active=tuple(r.name for r in active),
        last_successful_time=max(successes, default=None),
    )


def _cursor(status: CronStatus, created: datetime) -> datetime:
    marks = [t for t in (status.last_schedule_time, status.last_missed_time) if t is not None]
    return max(marks) if marks else created


def _start(
    cron: CronJob, status: CronStatus, due: DueRuns, names: set[str]
) -> tuple[list[CronAction], CronStatus]:
    """Actions for a due run (``due.start`` is set) under the concurrency policy."""
    assert due.start is not None
    name = run_name(cron.name, due.start)
    if name in names:
        # Created before the status recorded it (a leader stopped in between): record it now.
        return [], replace(status, last_schedule_time=due.start)
    if cron.concurrency_policy == ConcurrencyPolicy.Forbid and status.active:
        return [SkipRun(scheduled_time=due.start, active=status.active)], status
    actions: list[CronAction] = []
    if due.missed or due.too_many_missed:
        actions.append(MissedRuns(count=due.missed, too_many=due.too_many_missed))
    active = status.active
    if cron.concurrency_policy == ConcurrencyPolicy.Replace:
        actions += [CancelRun(name=n) for n in active]
        active = ()
    actions.append(CreateRun(name=name, scheduled_time=due.start, job=run_job(cron, due.start)))
    return actions, replace(status, active=(*active, name), last_schedule_time=due.start)


def decide_cron(
    cron: CronJob,
    *,
    created: datetime,
    status: CronStatus,
    runs: Sequence[CronRun],
    now: datetime,
) -> CronDecision:
    """Everything to do for ``cron`` at ``now``.

    ``created`` is the CronJob's creation time; ``runs`` are the Jobs it made that still exist.
    """
    actions: list[CronAction] = list(_history(cron, runs))
    new = _observed(status, runs)
    if cron.suspend:
        return CronDecision(actions=tuple(actions), status=new, next_time=None)
    due = due_runs(cron, since=_cursor(new, created), now=now)
    if due.too_late is not None:
        actions.append(MissedRuns(count=due.missed, latest=due.too_late, too_many=due.too_many_missed))
        new = replace(new, last_missed_time=due.too_late)
    elif due.start is not None:
        started, new = _start(cron, new, due, {r.name for r in runs})
        actions += started
    return CronDecision(actions=tuple(actions), status=new, next_time=due.next_time)
