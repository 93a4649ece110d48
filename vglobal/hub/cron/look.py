"""One look at one CronJob, in one transaction: the pure decision (model.cron_decision) applied.

The CronJob's row is locked for the look, so two hubs that both believe they lead take turns, and
the second sees the runs the first made. A run is stored under its unique name through the same
path as a submitted Job, in the same transaction as the status that records it: a hub killed
before the commit made neither, one killed after made both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from vglobal.hub.errors import AlreadyExists, HubError
from vglobal.hub.job_actions import cancel_job, delete_job
from vglobal.hub.submit import store_one
from vglobal.model.cron_decision import (
    CancelRun,
    CreateRun,
    CronAction,
    CronRun,
    CronStatus,
    DeleteRun,
    MissedRuns,
    SkipRun,
    decide_cron,
)
from vglobal.model.cronjob import CronJob, parse_cron_job
from vglobal.model.errors import ManifestError
from vglobal.model.records import CronJobRow, OwnedJob
from vglobal.model.workflow_status import cron_status_from_json, cron_status_to_json
from vglobal.store.repo import cronjobs as cron_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

# A run that could not be made (its queue closed, say) is tried again this much later.
RETRY_AFTER = timedelta(seconds=30)


@dataclass
class Look:
    """What one look did, for the loop and for the events it writes."""

    cron: CronJob
    row: CronJobRow
    now: datetime
    previous: CronStatus  # as the look found it
    status: CronStatus  # as it leaves it
    next_time: datetime | None
    runs: dict[str, OwnedJob]
    events: list[NewEvent] = field(default_factory=list)
    skipped: datetime | None = None  # a scheduled time Forbid held back in this look

    def note(self, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.append(
            NewEvent(
                reason,
                message,
                kind="Warning" if warning else "Normal",
                owner_uid=self.row.uid,
                time=self.now,
            )
        )


def _create(look: Look, action: CreateRun, *, session: Session) -> None:
    before = look.status
    try:
        store_one(action.job, session=session, owner_uid=look.row.uid)
    except AlreadyExists:
        # A job of that name that this CronJob did not make: the scheduled time is spent.
        look.status = replace(before, active=tuple(n for n in before.active if n != action.name))
        look.note(
            "FailedCreate", f'job "{action.name}" exists and was not made by this CronJob', warning=True
        )
        return
    except (HubError, ManifestError) as exc:
        # Not made: the time stays due, and is tried again until its deadline passes.
        look.status = replace(
            before,
            active=tuple(n for n in before.active if n != action.name),
            last_schedule_time=look.previous.last_schedule_time,
        )
        retry = look.now + RETRY_AFTER
        look.next_time = min(look.next_time, retry) if look.next_time else retry
        look.note("FailedCreate", f'job "{action.name}": {exc}', warning=True)
        return
    look.note("SuccessfulCreate", f"created job {action.name}")


def _apply(look: Look, action: CronAction, *, session: Session) -> None:
    if isinstance(action, CreateRun):
        _create(look, action, session=session)
    elif isinstance(action, CancelRun):
        run = look.runs.get(action.name)
        if run is not None and cancel_job(
            run.uid, session=session, reason=f"replaced by a newer run of CronJob {look.cron.name}"
        ):
            look.note(action.reason, f"cancelled job {action.name}")
    elif isinstance(action, DeleteRun):
        run = look.runs.get(action.name)
        if run is not None and delete_job(
            run.uid, run.binding_phase, session=session, namespace=look.row.namespace, name=run.name
        ):
            look.note(action.reason, f"deleted job {action.name}")
    elif isinstance(action, SkipRun):
        look.skipped = action.scheduled_time
        look.note(
            action.reason,
            f"the run due at {action.scheduled_time:%Y-%m-%dT%H:%M:%SZ} waits: "
            f"{', '.join(action.active)} still active (concurrencyPolicy Forbid)",
        )
    elif isinstance(action, MissedRuns):
        look.note(action.reason, action.message, warning=True)


def look_at_cron(
    uid: str, *, now: datetime, session: Session, skipped: datetime | None = None
) -> Look | None:
    """Decide and apply what ``now`` asks of the CronJob ``uid``; None if it is gone.

    ``skipped`` is the scheduled time the loop already reported held back by Forbid, so that a
    run held back for many looks is reported once.
    """
    row = cron_repo.get_cron(uid=uid, for_update=True, session=session)
    if row is None:
        return None
    cron = parse_cron_job(row.manifest)
    owned = jobs_repo.owned(uid, session=session)
    runs = [CronRun(name=j.name, phase=j.phase, created=j.created_at, finished=j.finished_at) for j in owned]
    before = cron_status_from_json(row.status)
    decision = decide_cron(cron, created=row.created_at, status=before, runs=runs, now=now)
    look = Look(
        cron=cron,
        row=row,
        now=now,
        previous=before,
        status=decision.status,
        next_time=decision.next_time,
        runs={j.name: j for j in owned},
    )
    for action in decision.actions:
        if isinstance(action, SkipRun) and action.scheduled_time == skipped:
            look.skipped = skipped
            continue
        _apply(look, action, session=session)
    cron_repo.save_status(
        uid, cron_status_to_json(look.status), look.next_time, looked_at=now, session=session
    )
    events_repo.add_events(look.events, session=session)
    return look
