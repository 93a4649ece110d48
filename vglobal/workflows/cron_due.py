"""Which scheduled time of a CronJob is due now, with Kubernetes' rules for missed runs.

After any gap (downtime, suspension, a run held back by ``Forbid``) at most one run is
started: the most recent unmet scheduled time, and only if it is no more than
``startingDeadlineSeconds`` late; the others are counted as missed. Times at or before the
cursor (the last scheduled or missed time, or the creation time) are never due again, so a
clock that jumps backwards brings nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from vglobal.model.cronjob import CronJob

__all__ = ["MISSED_WARNING_OVER", "DueRuns", "due_runs"]

# More unmet times than this since the cursor (within the deadline) earns Kubernetes'
# TooManyMissedTimes warning; counting stops just above it.
MISSED_WARNING_OVER = 100
_COUNT_CAP = MISSED_WARNING_OVER + 1
# A deadline longer than this is no deadline (and keeps date arithmetic in range).
_LONGEST_DEADLINE = timedelta(days=365 * 100)


@dataclass(frozen=True, kw_only=True)
class DueRuns:
    """What the schedule asks for at ``now``."""

    start: datetime | None = None  # the scheduled time to start a run for now
    too_late: datetime | None = None  # the latest unmet time, past startingDeadlineSeconds: not started
    missed: int = 0  # unmet times not started (besides ``start``); at most 101, meaning "more than 100"
    too_many_missed: bool = False  # more than 100 unmet times within the deadline
    next_time: datetime  # the next scheduled time after both ``now`` and the cursor: when to look again


def _utc(t: datetime) -> datetime:
    if t.tzinfo is None:
        raise ValueError("times must be timezone-aware")
    return t.astimezone(UTC)


def _deadline(cron: CronJob) -> timedelta | None:
    seconds = cron.starting_deadline_seconds
    if seconds is None:
        return None
    return min(timedelta(seconds=seconds), _LONGEST_DEADLINE)


def due_runs(cron: CronJob, *, since: datetime, now: datetime) -> DueRuns:
    """The run due at ``now`` given the cursor ``since`` (scheduled times after it are unmet).

    ``since`` is the later of ``status.lastScheduleTime`` and the last missed time, or the
    CronJob's creation time before any of them.
    """
    since, now = _utc(since), _utc(now)
    schedule = cron.schedule
    next_time = schedule.next_after(max(now, since), anchor=since)
    latest = schedule.latest_at_or_before(now, anchor=since) if now > since else None
    if latest is None or latest <= since:
        return DueRuns(next_time=next_time)
    unmet = schedule.count_between(since, now, cap=_COUNT_CAP + 1, anchor=since)
    deadline = _deadline(cron)
    in_window = unmet
    if deadline is not None and now - deadline > since:
        in_window = schedule.count_between(now - deadline, now, cap=_COUNT_CAP, anchor=since)
    too_many = in_window > MISSED_WARNING_OVER
    if deadline is not None and latest + deadline < now:
        missed = min(unmet, _COUNT_CAP)
        return DueRuns(too_late=latest, missed=missed, too_many_missed=too_many, next_time=next_time)
    missed = min(unmet - 1, _COUNT_CAP)
    return DueRuns(start=latest, missed=missed, too_many_missed=too_many, next_time=next_time)
