"""One look at one JobFlow, in one transaction: the pure progress (model.flow_progress) applied.

The flows' Jobs are made from the JobTemplates as they were when the JobFlow was applied, under
their unique names (``<jobflow>-<flow>``) through the same path as a submitted Job: a look that
runs twice, or after a restart, makes nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from vglobal.hub.errors import AlreadyExists, HubError
from vglobal.hub.job_actions import delete_job
from vglobal.hub.submit import store_one
from vglobal.model.errors import ManifestError
from vglobal.model.flow_progress import FlowJob, JobFlowPhase, TaskCounts, flow_progress
from vglobal.model.jobflow import JobFlow, flow_job, parse_job_flow, parse_job_template
from vglobal.model.records import JobFlowRow, OwnedJob
from vglobal.model.workflow_status import flow_status_from_json, flow_status_to_json
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobflows as flows_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent


@dataclass
class FlowLook:
    flow: JobFlow
    row: JobFlowRow
    phase: JobFlowPhase
    events: list[NewEvent] = field(default_factory=list)

    def note(self, reason: str, message: str, *, now: datetime, warning: bool = False) -> None:
        kind = "Warning" if warning else "Normal"
        self.events.append(NewEvent(reason, message, kind=kind, owner_uid=self.row.uid, time=now))


def _flow_job(j: OwnedJob) -> FlowJob:
    return FlowJob(
        phase=j.phase,
        created=j.created_at,
        finished=j.finished_at,
        tasks={
            t.name: TaskCounts(
                replicas=t.replicas,
                pending=t.pending,
                running=t.running,
                succeeded=t.succeeded,
                failed=t.failed,
            )
            for t in j.tasks
        },
    )


def _create(look: FlowLook, name: str, *, now: datetime, session: Session) -> None:
    template = parse_job_template(look.row.templates[name])
    job = flow_job(look.flow, name, template)
    try:
        store_one(job, session=session, owner_uid=look.row.uid)
    except AlreadyExists:
        look.note(
            "FailedCreate", f'job "{job.name}" exists and was not made by this JobFlow', now=now, warning=True
        )
        return
    except (HubError, ManifestError) as exc:
        look.note("FailedCreate", f'job "{job.name}": {exc}', now=now, warning=True)
        return
    look.note("Created", f"created job {job.name} for flow {name}", now=now)


def look_at_flow(uid: str, *, now: datetime, session: Session) -> FlowLook | None:
    """Make the Jobs whose dependencies are met, delete the retained ones when due, record the
    status; None if the JobFlow is gone."""
    row = flows_repo.get_flow(uid=uid, for_update=True, session=session)
    if row is None:
        return None
    flow = parse_job_flow(row.manifest)
    owned = {j.name: j for j in jobs_repo.owned(uid, session=session)}
    previous = flow_status_from_json(row.status)
    progress = flow_progress(flow, {n: _flow_job(j) for n, j in owned.items()}, previous)
    look = FlowLook(flow=flow, row=row, phase=progress.status.phase)
    for name in progress.create:
        _create(look, name, now=now, session=session)
    for job_name in progress.delete:
        j = owned[job_name]
        if delete_job(j.uid, j.binding_phase, session=session, namespace=row.namespace, name=j.name):
            look.note("Deleted", f"deleted job {job_name} (jobRetainPolicy delete)", now=now)
    if previous is None or previous.phase != look.phase:
        look.note(look.phase.value, f"JobFlow is {look.phase.value}", now=now, warning=look.phase == "Failed")
    flows_repo.save_status(uid, look.phase.value, flow_status_to_json(progress.status), session=session)
    events_repo.add_events(look.events, session=session)
    return look
