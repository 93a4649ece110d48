"""ApplyJob: kubectl's apply of one job, in the caller's transaction.

A namespace/name not stored yet is submitted as SubmitJob would (``created``). A stored one is
compared with what the caller applies (``model/apply_rules.py``): the same is ``unchanged``; a
change that the job's state allows is ``configured``, with ``spec_generation`` one more: a waiting
job takes the whole new manifest (its facts, request and gang; the dispatcher admits it again), a
running one keeps its binding and its cluster's agent is sent the new manifest (replicas, labels,
annotations; ``agents/deliver.py``) and reports the generation it carries out. A change the state
does not allow is INVALID_ARGUMENT naming the field, and nothing is stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy.orm import Session

from vglobal.config import HubSettings
from vglobal.hub.auth.access import require
from vglobal.hub.auth.policy import Action
from vglobal.hub.errors import FailedPrecondition, InvalidArgument
from vglobal.hub.job_queue import QueueChoice
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, deliver_to, notify
from vglobal.hub.submit import (
    ItemFailed,
    Submission,
    accept,
    check_limits,
    check_references,
    new_job,
    parse_one,
    store,
)
from vglobal.model import apply_rules
from vglobal.model.binding import FINISHED, BindingPhase
from vglobal.model.job import Job
from vglobal.model.records import JobRow
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import job_specs
from vglobal.store.repo.events import NewEvent

CREATED, CONFIGURED, UNCHANGED = "created", "configured", "unchanged"
_FINISHED = frozenset(p.value for p in FINISHED)


@dataclass(frozen=True)
class ApplyRequest:
    manifest: str
    request_id: str = ""
    field_validation: str = ""
    field_manager: str = ""
    server_side: bool = False
    force_conflicts: bool = False

    @property
    def manager(self) -> str:
        if self.field_manager:
            return self.field_manager
        return apply_rules.SERVER_SIDE_MANAGER if self.server_side else apply_rules.CLIENT_SIDE_MANAGER


def apply_job(req: ApplyRequest, settings: HubSettings, *, session: Session) -> tuple[JobRow, str]:
    """The job as stored after the apply, and kubectl's word for what happened."""
    item = accept(req.manifest, settings, req.field_validation, req.request_id)
    job = item.doc
    if not isinstance(job, Job):
        raise InvalidArgument("kind: a HyperJob is applied as it is submitted (SubmitJob), not changed")
    live = job_specs.lock_job(job.namespace, job.name, session=session)
    if live is None:
        return _create(item.lone or Submission(job), req, session=session), CREATED
    require(Action.submit_jobs, queue=live.queue)
    try:
        applied = apply_rules.apply(
            live.manifest,
            live.managed_fields,
            job.raw,
            req.manager,
            server_side=req.server_side,
            force=req.force_conflicts,
        )
    except apply_rules.Conflict as exc:
        raise FailedPrecondition(str(exc)) from None
    if apply_rules.same(live.manifest, applied.manifest):
        return live, UNCHANGED
    waiting = live.binding_phase == BindingPhase.Suspended.value
    state = apply_rules.JobState(
        kind=str(live.manifest.get("kind", "")), waiting=waiting, finished=live.binding_phase in _FINISHED
    )
    try:
        paths = apply_rules.check_change(live.manifest, applied.manifest, state)
    except apply_rules.Immutable as exc:
        raise InvalidArgument(str(exc)) from None
    # Server-side apply may keep fields of other managers: what is stored is parsed again.
    merged = job if applied.manifest == job.raw else _parse(applied.manifest, settings, req.field_validation)
    check_limits(merged, settings)
    merged = QueueChoice(session).resolve(merged, stored=live.queue)
    priority = check_references(merged, session=session) if waiting else live.priority
    if merged.queue != live.queue:
        require(Action.submit_jobs, queue=merged.queue)
    generation = live.spec_generation + 1
    new = new_job(merged, req.request_id or None, priority, submitted_by=item.principal)
    job_specs.respecify(
        live.uid, new, spec_generation=generation, managed=applied.managers, waiting=waiting, session=session
    )
    changed = ", ".join(apply_rules.render(p) for p in paths[:4]) + (", ..." if len(paths) > 4 else "")
    events_repo.add_events(
        [
            NewEvent(
                "Configured",
                f"generation {generation} applied by {req.manager}: {changed}",
                job_uid=live.uid,
                principal=item.principal,
            )
        ],
        session=session,
        notify=DISPATCH if waiting else None,
    )
    if not waiting and live.cluster and live.binding_phase not in _FINISHED:
        notify(FENCE, session=session)
        notify(DELIVER, session=session, payload=deliver_to([live.cluster]))
    row = job_specs.lock_job(job.namespace, job.name, session=session)
    assert row is not None
    return row, CONFIGURED


def _parse(manifest: dict[str, object], settings: HubSettings, validation: str) -> Job:
    return parse_one(json.dumps(manifest), Job, max_bytes=settings.max_manifest_bytes, validation=validation)


def _create(sub: Submission, req: ApplyRequest, *, session: Session) -> JobRow:
    try:
        ((row, _),) = store([sub], session=session)
    except ItemFailed as failed:
        raise failed.error from None
    managers = apply_rules.apply({}, {}, row.manifest, req.manager).managers
    job_specs.set_managed(row.uid, managers, session=session)
    return row
