"""Applying a JobFlow, in the caller's transaction: everything it names must exist (its
JobTemplates, and what their Jobs name), the caller must be able to submit to every queue its Jobs
go to, and the templates are kept as they are now, for the flow loop to make its Jobs from."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from vglobal.hub.auth.access import require
from vglobal.hub.auth.policy import Action
from vglobal.hub.errors import FailedPrecondition, raise_prefixed
from vglobal.hub.notify import WORKFLOWS, notify
from vglobal.hub.submit import check_references
from vglobal.model.jobflow import JobFlow, JobTemplate, check_flow_templates, flow_job, parse_job_template
from vglobal.model.records import JobFlowRow
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobflows as flows_repo
from vglobal.store.repo.events import NewEvent


def check_flow(flow: JobFlow, *, session: Session) -> dict[str, JobTemplate]:
    """Everything a JobFlow names must exist: its templates, and what their Jobs name (queue,
    priority class). Returns the templates by flow name."""
    names = [f.name for f in flow.flows]
    rows = flows_repo.templates_of(flow.namespace, names, session=session)
    templates = {name: parse_job_template(r.manifest) for name, r in rows.items()}
    check_flow_templates(flow, templates)
    for i, f in enumerate(flow.flows):
        try:
            check_references(flow_job(flow, f.name, templates[f.name]), session=session)
        except Exception as exc:
            raise_prefixed(exc, f'spec.flows[{i}].name: JobTemplate "{f.name}": ')
    return templates


def apply_flow(flow: JobFlow, *, principal: str, now: datetime, session: Session) -> tuple[JobFlowRow, str]:
    """Create the JobFlow; returns its row and "created", or "unchanged" if it exists as it is
    (FAILED_PRECONDITION if it exists with another spec: a JobFlow cannot be changed)."""
    old = flows_repo.get_flow(namespace=flow.namespace, name=flow.name, session=session)
    if old is not None:
        if old.manifest != flow.raw:
            raise FailedPrecondition(
                f'jobflow "{flow.key}" exists with another spec: a JobFlow cannot be changed, delete it first'
            )
        return old, "unchanged"
    templates = check_flow(flow, session=session)
    for queue in sorted({t.queue for t in templates.values()}):
        require(Action.submit_jobs, queue=queue)
    snapshot = {name: t.raw for name, t in templates.items()}
    uid = str(uuid.uuid4())
    if not flows_repo.insert_flow(uid, flow.namespace, flow.name, flow.raw, snapshot, session=session):
        raise FailedPrecondition(f'jobflow "{flow.key}" was created meanwhile: apply again')
    events_repo.add_events(
        [NewEvent("Applied", f"created by {principal}", owner_uid=uid, principal=principal, time=now)],
        session=session,
    )
    notify(WORKFLOWS, session=session)
    row = flows_repo.get_flow(uid=uid, session=session)
    assert row is not None
    return row, "created"
