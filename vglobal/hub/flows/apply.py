"""Applying a JobFlow, in the caller's transaction: everything it names must exist (its
JobTemplates, and what their Jobs name), the caller must be able to submit to every queue its Jobs
go to, and the templates are kept as they are now, for the flow loop to make its Jobs from."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.orm import Session

from vglobal.hub.auth.access import require
from vglobal.hub.auth.policy import Action
from vglobal.hub.errors import FailedPrecondition, InvalidArgument, raise_prefixed
from vglobal.hub.notify import WORKFLOWS, notify
from vglobal.hub.submit import check_references
from vglobal.model import apply_rules
from vglobal.model.jobflow import JobFlow, JobTemplate, check_flow_templates, flow_job, parse_job_template
from vglobal.model.records import JobFlowRow
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobflows as flows_repo
from vglobal.store.repo import jobs as jobs_repo
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
    """Create the JobFlow ("created"), or apply it over the stored one: "unchanged" when the
    same, else "configured": its labels and annotations at any time, its spec until it made a
    Job (INVALID_ARGUMENT naming the field after: what ran stays as it ran)."""
    old = flows_repo.get_flow(namespace=flow.namespace, name=flow.name, session=session, for_update=True)
    if old is not None:
        return _change(old, flow, principal=principal, now=now, session=session)
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


def _change(
    old: JobFlowRow, flow: JobFlow, *, principal: str, now: datetime, session: Session
) -> tuple[JobFlowRow, str]:
    if apply_rules.same(old.manifest, flow.raw):
        return old, "unchanged"
    started = bool(jobs_repo.owned(old.uid, session=session))
    state = apply_rules.JobState("JobFlow", not started, started, "once the flow made its jobs")
    try:
        paths = apply_rules.check_change(old.manifest, flow.raw, state)
    except apply_rules.Immutable as exc:
        raise InvalidArgument(str(exc)) from None
    templates = old.templates
    if any(p[0] == "spec" for p in paths):
        checked = check_flow(flow, session=session)
        for queue in sorted({t.queue for t in checked.values()}):
            require(Action.submit_jobs, queue=queue)
        templates = {name: t.raw for name, t in checked.items()}
    flows_repo.update_flow(old.uid, flow.raw, templates, session=session)
    changed = ", ".join(apply_rules.render(p) for p in paths[:4])
    said = f"configured by {principal}: {changed}"
    events_repo.add_events(
        [NewEvent("Applied", said, owner_uid=old.uid, principal=principal, time=now)], session=session
    )
    notify(WORKFLOWS, session=session)
    row = flows_repo.get_flow(uid=old.uid, session=session)
    assert row is not None
    return row, "configured"
