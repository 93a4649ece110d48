"""Turning a submitted manifest into stored rows, with every check before any write.

Every job the hub stores goes the same way: ``accept`` turns a caller's manifest into what is
stored (parsed, within this hub's limits, in a queue the caller may submit to): a Volcano Job or a
workload kind read as one is stored as it is, a HyperJob as its children (``hyperjobs.children``,
split over the clusters when it asks for it). ``store`` writes accepted jobs (SubmitJob's groups,
SubmitJobs, and the jobs CronJobs and JobFlows make) with their Submitted events and wakes the
dispatcher, in the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.orm import Session

from vglobal.config import HubSettings
from vglobal.hub import hyperjobs
from vglobal.hub.auth.access import require, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, TooLarge
from vglobal.hub.job_queue import QueueChoice, names_no_queue, queue_source
from vglobal.hub.notify import DISPATCH
from vglobal.model import priority_class
from vglobal.model.dependencies import Dependency
from vglobal.model.fields import FieldValidation, parse_validation
from vglobal.model.forms import POD_SLOT, Gang, Placement, TaskCounts
from vglobal.model.hyperjob import HyperJob
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.model.queue import QueueRefused, check_job_queue
from vglobal.model.records import JobRow
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.jobs import NewJob

M = TypeVar("M")


def field_validation(text: str) -> FieldValidation:
    """A request's ``field_validation`` ("" is Strict), or INVALID_ARGUMENT naming the choices."""
    try:
        return parse_validation(text)
    except ValueError as exc:
        raise InvalidArgument(f"field_validation: {exc}") from None


def parse_one(text: str, kind: type[M], *, max_bytes: int, validation: str = "") -> M:
    """Exactly one manifest of ``kind``; the model refuses text over ``max_bytes`` (RESOURCE_EXHAUSTED)
    and, unless ``validation`` is Warn or Ignore, fields the kind does not define."""
    docs = parse_manifests(text, max_bytes=max_bytes, validation=field_validation(validation))
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


def check_task_classes(job: Job, *, session: Session) -> None:
    """A task's own priorityClassName must name a PriorityClass, as the job's must."""
    try:
        priority_class.check_task_classes(
            job, lambda name: queues_repo.get_priority_class(name, session=session) is not None
        )
    except priority_class.UnknownPriorityClass as exc:
        raise InvalidArgument(str(exc)) from None


def resolve_priority(job: Job, *, session: Session) -> int:
    try:
        return priority_class.job_priority(
            job,
            lambda name: queues_repo.get_priority_class(name, session=session),
            lambda: queues_repo.list_priority_classes(session=session),
        )
    except priority_class.UnknownPriorityClass as exc:
        raise InvalidArgument(str(exc)) from None


def check_queue(job: Job, *, session: Session) -> None:
    queue = queues_repo.get_queue(job.queue, session=session)
    try:
        check_job_queue(
            job.queue,
            None if queue is None else queue.state,
            queue is not None and bool(queues_repo.children(job.queue, session=session)),
        )
    except QueueRefused as exc:
        raise (NotFound if exc.missing else FailedPrecondition)(str(exc)) from None


def check_references(job: Job, *, session: Session) -> int:
    """What a job's manifest names must exist: its queue (Open, a leaf) and its priority class;
    returns the job's priority."""
    check_queue(job, session=session)
    return resolve_priority(job, session=session)


class ItemFailed(Exception):
    """Submission ``index`` of a batch was refused with ``error``: nothing of the batch is stored."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def new_job(
    job: Job,
    request_id: str | None,
    priority: int,
    owner_uid: str | None = None,
    submitted_by: str | None = None,
) -> NewJob:
    request = job.total_request() + POD_SLOT.scale(job.total_pods())
    return NewJob(
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
        submitted_by=submitted_by,
    )


class _References:
    """Queue checks and priorities of one batch, each looked up once."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.queues: dict[str, Exception | None] = {}
        self.priorities: dict[str | None, int] = {}

    def check(self, job: Job) -> int:
        """The job's priority, once its queue takes it (else the queue's error)."""
        if job.queue not in self.queues:
            try:
                check_queue(job, session=self.session)
                self.queues[job.queue] = None
            except Exception as exc:
                self.queues[job.queue] = exc
        if (failed := self.queues[job.queue]) is not None:
            raise failed
        key = job.priority_class_name or None
        if key in self.priorities and any(t.priority_class_name for t in job.tasks):
            check_task_classes(job, session=self.session)  # else resolve_priority checks them
        if key not in self.priorities:
            self.priorities[key] = resolve_priority(job, session=self.session)
        return self.priorities[key]


def store_jobs(
    items: Sequence[tuple[Job, str | None]],
    *,
    session: Session,
    owner_uid: str | None = None,
    principals: Sequence[str | None] | None = None,
) -> list[tuple[JobRow, bool]]:
    """Validate references and store the jobs with Suspended bindings, in a few statements for all
    (the caller commits); returns (job, created) for each, in order.

    A submission whose request_id an earlier one (stored before, or earlier in ``items``) has gets
    that job back (created=False), looked up before its references are validated against today's
    state; a namespace/name taken under another request is ALREADY_EXISTS (``ItemFailed``).
    ``owner_uid`` names the CronJob or JobFlow that makes the jobs; ``principals`` (one per item)
    who submits each, stored with the job.
    """
    earlier = jobs_repo.by_request_ids([r for _, r in items if r], session=session)
    refs = _References(session)
    choice = QueueChoice(session)
    news: list[NewJob | None] = []  # None: a request_id submitted before, or earlier in the batch
    seen: set[str] = set()
    for i, (job, request_id) in enumerate(items):
        if request_id and (request_id in earlier or request_id in seen):
            news.append(None)
            continue
        try:
            by = principals[i] if principals is not None else None
            placed = choice.resolve(job)
            news.append(new_job(placed, request_id, refs.check(placed), owner_uid, by))
        except Exception as exc:
            raise ItemFailed(i, exc) from None
        if request_id:
            seen.add(request_id)
    to_store = [n for n in news if n is not None]
    rows = jobs_repo.insert_rows(to_store, session=session)
    stored = rows.keys()
    for n in to_store:
        if n.uid in stored and n.request_id:
            earlier[n.request_id] = rows[n.uid]
    # Not stored: a request_id committed meanwhile by another call, or a name taken.
    missed = [n.request_id for n in to_store if n.uid not in stored and n.request_id]
    earlier.update(jobs_repo.by_request_ids(missed, session=session))
    out: list[tuple[JobRow, bool]] = []
    for i, ((job, request_id), new) in enumerate(zip(items, news, strict=True)):
        if new is not None and new.uid in stored:
            out.append((rows[new.uid], True))
        elif request_id and request_id in earlier:
            out.append((earlier[request_id], False))
        else:
            raise ItemFailed(i, AlreadyExists(f'job "{job.namespace}/{job.name}" already exists'))
    return out


@dataclass(frozen=True, slots=True)
class Submission:
    """A job to store, the request_id it was submitted under, and who submitted it (None: the
    hub's own loops)."""

    job: Job
    request_id: str | None = None
    principal: str | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    """A manifest the hub takes, from a caller: a Job (a Volcano Job, or a workload kind read as
    one) is stored as it is, a HyperJob as its children."""

    doc: Job | HyperJob
    request_id: str | None
    principal: str | None
    # Strict refuses a HyperJob pinned to clusters that do not exist; Warn and Ignore take it
    # (the CLI's --validate=warn says which).
    validation: FieldValidation = FieldValidation.STRICT

    @property
    def lone(self) -> Submission | None:
        """The one job stored, when it needs nothing read to say which (not a HyperJob)."""
        return Submission(self.doc, self.request_id, self.principal) if isinstance(self.doc, Job) else None

    @property
    def grouped(self) -> bool:
        """Stored as a group of children, which its answer lists."""
        return isinstance(self.doc, HyperJob)

    def submissions(self, *, session: Session) -> list[Submission]:
        """What is stored: the Job, or the HyperJob's children (each child's request_id is the
        HyperJob's with its index)."""
        if isinstance(self.doc, Job):
            return [Submission(self.doc, self.request_id, self.principal)]
        if self.validation == FieldValidation.STRICT:
            hyperjobs.check_cluster_names(self.doc, session=session)
        kids = hyperjobs.children(self.doc, session=session)
        rid = self.request_id
        return [Submission(k, f"{rid}#{i}" if rid else None, self.principal) for i, k in enumerate(kids)]


def accept(manifest: str, settings: HubSettings, validation: str = "", request_id: str = "") -> Accepted:
    """Exactly one Job, workload or HyperJob manifest, within this hub's limits (a HyperJob's
    templates each), to a queue the caller may submit to (a HyperJob's children all go to one).
    Nothing is read or written: its references are checked by ``store``."""
    mode = field_validation(validation)
    docs = parse_manifests(manifest, max_bytes=settings.max_manifest_bytes, validation=mode)
    if len(docs) != 1:
        raise InvalidArgument(f"manifest: expected exactly one Job or HyperJob, got {len(docs)} documents")
    doc = docs[0]
    if isinstance(doc, Job):
        check_limits(doc, settings)
    elif isinstance(doc, HyperJob):
        for rj in doc.replicated:
            if rj.template is not None:
                check_limits(rj.template, settings)
    elif isinstance(doc, Dependency):
        raise InvalidArgument(
            f"kind: a {doc.kind} is not a job: apply it with ObjectService.ApplyObject "
            "(`vglobal apply`, Client.apply_object) before the jobs that use it"
        )
    else:
        raise InvalidArgument(f"kind: expected Job or HyperJob, got {type(doc).__name__}")
    if not _names_no_queue(doc):  # else checked once its namespace's queue is read
        require(Action.submit_jobs, queue=doc.queue)
    return Accepted(doc, request_id or None, who(), mode)


def _names_no_queue(doc: Job | HyperJob) -> bool:
    if isinstance(doc, Job):
        return names_no_queue(doc)
    templates = [rj.template for rj in doc.replicated]
    return all(t is not None and names_no_queue(t) for t in templates)


def store(
    items: Sequence[Submission], *, session: Session, owner_uid: str | None = None
) -> list[tuple[JobRow, bool]]:
    """Store the jobs (``store_jobs``), a Submitted event for each created, and wake the
    dispatcher if any was; the caller owns the transaction. ``ItemFailed`` names a refused one."""
    stored = store_jobs(
        [(s.job, s.request_id) for s in items],
        session=session,
        owner_uid=owner_uid,
        principals=[s.principal for s in items],
    )
    created = [(row, s.principal, s) for (row, new), s in zip(stored, items, strict=True) if new]
    events_repo.add_events(
        [
            NewEvent(
                "Submitted",
                f"queue {row.queue}{_from(s.job, row.queue)}, {sum(t.replicas for t in row.tasks)} pods",
                job_uid=row.uid,
                principal=principal,
            )
            for row, principal, s in created
        ],
        session=session,
        notify=DISPATCH,  # with the events (there are some whenever a job was created)
    )
    return stored


def _from(job: Job, queue: str) -> str:
    source = queue_source(job, queue)
    return f" (from {source})" if source else ""


def store_one(
    job: Job, *, session: Session, owner_uid: str | None = None, principal: str | None = None
) -> JobRow:
    """One job the hub makes (no request_id) through ``store``; its refusal is raised as is."""
    try:
        ((row, _),) = store([Submission(job, None, principal)], session=session, owner_uid=owner_uid)
    except ItemFailed as failed:
        raise failed.error from None
    return row
