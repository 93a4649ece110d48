"""Stopping and removing a job, for users (JobService) and for the CronJobs and JobFlows that own jobs.

``principal`` names who asked (the audit trail's name of the caller; None for the hub's own loops).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, notify
from vglobal.model.binding import ADMITTED
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent


def cancel_job(
    uid: str, *, session: Session, reason: str, principal: str | None = None, event: str = "Cancelled"
) -> bool:
    """An unfinished job becomes Aborted (its agent stops it); False if it had finished already.
    A suspend is the same move recorded as ``event`` "Suspended" (``resume_job`` undoes it)."""
    if bindings_repo.abort(uid, session=session, reason=reason) is None:
        return False
    jobs_repo.set_phase([uid], "Aborted", session=session)
    events_repo.add_events([NewEvent(event, reason, job_uid=uid, principal=principal)], session=session)
    notify(DELIVER, session=session)
    notify(FENCE, session=session)
    notify(DISPATCH, session=session)
    return True


def resume_job(uid: str, *, session: Session, reason: str, principal: str | None = None) -> bool:
    """An Aborted job (suspended, cancelled or aborted by its policies, as Volcano resumes any
    Aborted job) goes back to its queue; False if it was not Aborted."""
    if bindings_repo.resume(uid, session=session, reason=reason) is None:
        return False
    events_repo.add_events([NewEvent("Resumed", reason, job_uid=uid, principal=principal)], session=session)
    notify(DISPATCH, session=session)
    return True


def delete_job(
    uid: str,
    binding_phase: str,
    *,
    session: Session,
    namespace: str,
    name: str,
    queue: str = "",
    principal: str | None = None,
) -> bool:
    """Remove a job and its history; one still admitted to a cluster is stopped there. An event
    naming the job (not tied to it, so it outlives it) records the deletion and who asked."""
    # The binding first, as every writer of a job takes it: no deadlock with a status report.
    bindings_repo.current(uid, session=session, for_update=True)
    if binding_phase in ADMITTED:
        # Its agent learns on the next sync that the job is gone and stops it.
        notify(DELIVER, session=session)
        notify(FENCE, session=session)
    deleted = jobs_repo.delete_job(uid, session=session)
    if deleted:
        message = f"uid {uid}, queue {queue}" if queue else f"uid {uid}"
        events_repo.add_events(
            [NewEvent("Deleted", message, subject=f"job {namespace}/{name}", principal=principal)],
            session=session,
        )
    notify(DISPATCH, session=session)
    return deleted
