"""Turning a submitted Volcano Job manifest into stored rows, with every check before any write."""

from __future__ import annotations

import uuid
from typing import TypeVar

from sqlalchemy.orm import Session

from vglobal.config import HubSettings
from vglobal.hub.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, TooLarge
from vglobal.model.forms import POD_SLOT, Gang, Placement, TaskCounts
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.model.records import JobRow
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.jobs import NameTaken, NewJob

M = TypeVar("M")


def parse_one(text: str, kind: type[M], *, max_bytes: int) -> M:
    """Exactly one manifest of ``kind``; the model refuses text over ``max_bytes`` (RESOURCE_EXHAUSTED)."""
    docs = parse_manifests(text, max_bytes=max_bytes)
    if len(docs) != 1:
        raise InvalidArgument(f"manifest: expected exactly one {kind.__name__}, got {len(docs)} documents")
    doc = docs[0]
    if not isinstance(doc, kind):
        raise InvalidArgument(f"kind: expected {kind.__name__}, got {type(doc).__name__}")
    return doc


def check_limits(job: Job, settings: HubSettings) -> None:
    """A job bigger than this hub takes is RESOURCE_EXHAUSTED, naming the field and the flag."""
    if len(job.tasks) > settings.max_tasks_per_job:
        raise TooLarge(
            f"spec.tasks: {len(job.tasks)} tasks, more than the limit of {settings.max_tasks_per_job} "
            "(--max-tasks-per-job)"
        )
    pods = job.total_pods()
    if pods > settings.max_pods_per_job:
        raise TooLarge(
            f"spec.tasks[*].replicas: {pods} pods in all, more than the limit of {settings.max_pods_per_job} "
            "(--max-pods-per-job)"
        )


def resolve_priority(job: Job, *, session: Session) -> int:
    if job.priority_class_name:
        pc = queues_repo.get_priority_class(job.priority_class_name, session=session)
        if pc is None:
            raise InvalidArgument(
                f'spec.priorityClassName: priority class "{job.priority_class_name}" not found '
                "(apply a scheduling.k8s.io/v1 PriorityClass first)"
            )
        return pc.value
    defaults = [pc for pc in queues_repo.list_priority_classes(session=session) if pc.global_default]
    return defaults[0].value if defaults else 0


def check_queue(job: Job, *, session: Session) -> None:
    queue = queues_repo.get_queue(job.queue, session=session)
    if queue is None:
        raise NotFound(f'spec.queue: queue "{job.queue}" not found')
    if queue.state != "Open":
        raise FailedPrecondition(
            f'spec.queue: queue "{job.queue}" is {queue.state}; jobs can only be submitted to an Open queue'
        )
    if queues_repo.children(job.queue, session=session):
        raise FailedPrecondition(
            f'spec.queue: queue "{job.queue}" has child queues; jobs go only to leaf queues'
        )


def check_references(job: Job, *, session: Session) -> int:
    """What a job's manifest names must exist: its queue (Open, a leaf) and its priority class;
    returns the job's priority."""
    check_queue(job, session=session)
    return resolve_priority(job, session=session)


def store_job(
    job: Job, *, request_id: str | None, session: Session, owner_uid: str | None = None
) -> tuple[JobRow, bool]:
    """Validate references and store the job with a Suspended binding (the caller commits).

    ``owner_uid`` names the CronJob or JobFlow that makes the job."""
    if request_id:
        existing = jobs_repo.get_by_request_id(request_id, session=session)
        if existing is not None:
            return existing, False
    priority = check_references(job, session=session)
    request = job.total_request() + POD_SLOT.scale(job.total_pods())
    new = NewJob(
        uid=str(uuid.uuid4()),
        namespace=job.namespace,
        name=job.name,
        request_id=request_id or None,
        queue=job.queue,
        priority_class_name=job.priority_class_name,
        priority=priority,
        min_available=job.min_available,
        request=dict(request.items()),
        gang=Gang.of(job),
        pod_requests={t.name: dict((t.pod_request + POD_SLOT).items()) for t in job.tasks},
        placement=Placement.of(job),
        manifest=job.raw,
        tasks=tuple(TaskCounts.submitted(t) for t in job.tasks),
        labels=dict(job.labels),
        owner_uid=owner_uid,
    )
    try:
        return jobs_repo.insert_job(new, session=session)
    except NameTaken:
        raise AlreadyExists(f'job "{job.namespace}/{job.name}" already exists') from None


def submit_job(
    job: Job,
    *,
    request_id: str | None,
    session: Session,
    owner_uid: str | None = None,
    principal: str | None = None,
) -> tuple[JobRow, bool]:
    """``store_job`` and the new job's Submitted event naming who submitted it (None: the hub's own
    loops); the caller wakes the dispatcher."""
    row, created = store_job(job, request_id=request_id, session=session, owner_uid=owner_uid)
    if created:
        pods = sum(t.replicas for t in row.tasks)
        events_repo.add_events(
            [NewEvent("Submitted", f"queue {row.queue}, {pods} pods", job_uid=row.uid, principal=principal)],
            session=session,
        )
    return row, created
