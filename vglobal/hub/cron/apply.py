"""Applying a CronJob and running one by hand, in the caller's transaction.

What a CronJob's runs would name (queue, priority class) must exist when it is applied, as for a
submitted Job; taking over one that exists needs the right to submit where its runs go now. A run
made by hand is stored as every job is (``submit.store``) and owned by its CronJob.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from vglobal.hub.auth.access import require
from vglobal.hub.auth.policy import Action
from vglobal.hub.errors import raise_prefixed
from vglobal.hub.notify import WORKFLOWS, notify
from vglobal.hub.submit import check_references, store_one
from vglobal.model.cronjob import CronJob, manual_run_job, parse_cron_job, run_job
from vglobal.model.records import CronJobRow, JobRow
from vglobal.store.repo import cronjobs as cron_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent


def audit(
    row: CronJobRow, reason: str, message: str, *, principal: str, now: datetime, session: Session
) -> None:
    """An event of the CronJob's that says who did what to it."""
    events_repo.add_events(
        [NewEvent(reason, message, owner_uid=row.uid, principal=principal, time=now)], session=session
    )


def _store(cron: CronJob, *, now: datetime, session: Session) -> tuple[CronJobRow, str]:
    try:
        # What a run would name must exist now, as for a submitted Job.
        check_references(run_job(cron, now), session=session)
    except Exception as exc:
        raise_prefixed(exc, "spec.jobTemplate.")
    uid = str(uuid.uuid4())
    if cron_repo.insert_cron(uid, cron.namespace, cron.name, cron.raw, created_at=now, session=session):
        result = "created"
    else:
        old = cron_repo.get_cron(namespace=cron.namespace, name=cron.name, for_update=True, session=session)
        assert old is not None
        uid = old.uid
        result = "unchanged" if old.manifest == cron.raw else "configured"
        # Taking over another's CronJob needs the right to submit where its runs go now.
        require(Action.submit_jobs, queue=parse_cron_job(old.manifest).queue)
        if result == "configured":
            cron_repo.replace_manifest(uid, cron.raw, look_at=now, session=session)
    row = cron_repo.get_cron(uid=uid, session=session)
    assert row is not None
    return row, result


def apply_cron(cron: CronJob, *, principal: str, now: datetime, session: Session) -> tuple[CronJobRow, str]:
    """Create or change the CronJob (the caller may submit to its queue); returns its row and
    "created", "configured" or "unchanged". A change wakes the cron loop."""
    row, result = _store(cron, now=now, session=session)
    if result != "unchanged":
        audit(row, "Applied", f"{result} by {principal}", principal=principal, now=now, session=session)
        notify(WORKFLOWS, session=session)
    return row, result


def run_by_hand(row: CronJobRow, job_name: str, *, principal: str, now: datetime, session: Session) -> JobRow:
    """A run of the CronJob now, named ``job_name`` (or as a scheduled run would be)."""
    try:
        job = manual_run_job(parse_cron_job(row.manifest), job_name)
    except Exception as exc:
        raise_prefixed(exc, "job_name: ")
    made = store_one(job, session=session, owner_uid=row.uid, principal=principal)
    audit(
        row,
        "SuccessfulCreate",
        f"created job {made.name} by hand ({principal})",
        principal=principal,
        now=now,
        session=session,
    )
    notify(WORKFLOWS, session=session)
    return made
