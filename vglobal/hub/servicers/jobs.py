"""JobService: submit, read, cancel and delete Volcano Jobs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.hub import job_checkpoint
from vglobal.hub.auth.access import require, visible, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    TooLarge,
    look_up,
    raise_prefixed,
    rpc,
)
from vglobal.hub.group_commit import SubmitGroups
from vglobal.hub.job_actions import cancel_job, delete_job, resume_job
from vglobal.hub.job_apply import ApplyRequest, apply_job
from vglobal.hub.servicers import job_lists
from vglobal.hub.servicers.gone import explained
from vglobal.hub.servicers.job_verdicts import placement_verdicts
from vglobal.hub.servicers.times import time_field
from vglobal.hub.submit import Accepted, ItemFailed, Submission, accept, store
from vglobal.hub.watch.serve import WatchServer
from vglobal.model import hyperjob
from vglobal.model.binding import ADMITTED, BindingPhase
from vglobal.model.job_template import OWNER_REFERENCES
from vglobal.model.reasons import WaitKind
from vglobal.model.records import JobRow
from vglobal.store.engine import dry_run_scope, session_scope
from vglobal.store.repo import dispatches as dispatches_repo
from vglobal.store.repo import estimates as estimates_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import job_changes as changes_repo
from vglobal.store.repo import job_counts
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo

# What ExplainJob says of a waiting job whose reason the dispatcher has not written yet.
NOT_EXPLAINED_YET = (
    "waiting for the dispatcher: no reason recorded yet (after a burst of submissions, reasons are "
    "written over the next few cycles)"
)


def find_job(ref: jobs_pb2.JobRef, *, session: Session, action: Action = Action.read_jobs) -> JobRow:
    """The job, if the caller may ``action`` in its queue; a deleted one's NOT_FOUND says who deleted it."""
    namespace = ref.namespace or "default"
    try:
        row = look_up(
            "job",
            ref.uid or (ref.name and f"{namespace}/{ref.name}"),
            lambda: jobs_repo.get_job(
                session=session, uid=ref.uid or None, namespace=namespace, name=ref.name
            ),
            wanted="a job name or uid",
        )
    except NotFound as exc:
        if ref.uid:
            raise
        raise explained(exc, f"job {namespace}/{ref.name}", session=session) from None
    require(action, queue=row.queue)
    return row


def _not_a_child(row: JobRow) -> None:
    """A HyperJob's child is cancelled or deleted only with its siblings: alone, it would leave the
    HyperJob below its minAvailable for ever."""
    parent = row.labels.get(hyperjob.HYPERJOB_LABEL)
    if parent:
        raise FailedPrecondition(
            f"job {row.namespace}/{row.name} belongs to hyperjob {row.namespace}/{parent}: "
            "delete or cancel the hyperjob"
        )


class JobServicer(jobs_pb2_grpc.JobServiceServicer):
    def __init__(
        self,
        ctx: HubContext,
        watches: WatchServer,
        logs: Callable[[jobs_pb2.LogsRequest], AsyncIterator[jobs_pb2.LogLines]] | None = None,
    ) -> None:
        self.ctx = ctx
        self.watches = watches
        self.logs = logs
        self.groups = SubmitGroups(ctx.sessions)

    async def SubmitJob(
        self, request: jobs_pb2.SubmitJobRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> jobs_pb2.SubmitJobResponse:
        # A coroutine on the server's loop: one manifest parses quickly enough to need no thread.
        item = accept(request.manifest, self.ctx.settings, request.field_validation, request.request_id)
        (answer,) = await self._store([item], dry_run=request.dry_run, prefix=False)
        return answer

    async def SubmitJobs(
        self, request: jobs_pb2.SubmitJobsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> jobs_pb2.SubmitJobsResponse:
        if len(request.jobs) > self.ctx.settings.max_batch:
            raise TooLarge(
                f"jobs: {len(request.jobs)} jobs in one batch, "
                f"more than the limit of {self.ctx.settings.max_batch}"
            )
        dry = {item.dry_run for item in request.jobs}
        if len(dry) > 1:
            raise InvalidArgument("jobs[*].dry_run: a batch is a dry run as a whole or not at all")
        # Every document accepted (on a thread: a batch is long to parse), then all stored in one
        # transaction: a bad one stores nothing.
        items = await asyncio.to_thread(self._accept_all, request)
        answers = await self._store(items, dry_run=dry == {True}, prefix=True)
        return jobs_pb2.SubmitJobsResponse(results=answers)

    def _accept_all(self, request: jobs_pb2.SubmitJobsRequest) -> list[Accepted]:
        items = []
        for i, it in enumerate(request.jobs):
            try:
                items.append(accept(it.manifest, self.ctx.settings, it.field_validation, it.request_id))
            except Exception as exc:
                raise_prefixed(exc, f"jobs[{i}]: ")
        return items

    async def _store(
        self, items: list[Accepted], *, dry_run: bool, prefix: bool
    ) -> list[jobs_pb2.SubmitJobResponse]:
        """Every item stored, one answer each (a request_id stored before gets its job back); a
        refusal names its item (``jobs[i]: ``) when ``prefix``. A lone Job joins the calls that
        arrive meanwhile in one transaction (group_commit.py) and waits for it holding no thread;
        anything else is stored as a whole in a transaction of its own, on a thread."""
        lone = items[0].lone if len(items) == 1 and not dry_run else None
        if lone is None:
            return await asyncio.to_thread(self._store_together, items, dry_run, prefix)
        try:
            row, created = await asyncio.wrap_future(self.groups.enqueue(lone))
        except Exception as exc:
            raise_prefixed(exc, "jobs[0]: " if prefix else "")
        return [jobs_pb2.SubmitJobResponse(job=convert.job(row), created=created)]

    def _store_together(
        self, items: list[Accepted], dry_run: bool, prefix: bool
    ) -> list[jobs_pb2.SubmitJobResponse]:
        """``_store`` in one transaction, all rolled back for a dry run (every check and write of
        a real submission: the jobs as they would be)."""
        with dry_run_scope(self.ctx.sessions, dry_run) as session:
            submissions: list[Submission] = []
            spans: list[tuple[int, int]] = []  # each item's submissions
            for i, item in enumerate(items):
                try:
                    submissions.extend(item.submissions(session=session))
                except Exception as exc:
                    raise_prefixed(exc, f"jobs[{i}]: " if prefix else "")
                spans.append((spans[-1][1] if spans else 0, len(submissions)))
            try:
                stored = store(submissions, session=session)
            except ItemFailed as failed:
                at = next(i for i, (start, end) in enumerate(spans) if start <= failed.index < end)
                raise_prefixed(failed.error, f"jobs[{at}]: " if prefix else "")
        answers = []
        for item, (start, end) in zip(items, spans, strict=True):
            row, created = stored[start]
            answer = jobs_pb2.SubmitJobResponse(job=convert.job(row), created=created)
            if item.grouped:
                answer.hyperjob_children.extend(convert.job(r) for r, _ in stored[start:end])
            answers.append(answer)
        return answers

    @rpc
    def ApplyJob(
        self, request: jobs_pb2.ApplyJobRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.ApplyJobResponse:
        req = ApplyRequest(
            request.manifest,
            request.request_id,
            request.field_validation,
            request.field_manager,
            request.server_side,
            request.force_conflicts,
        )
        with dry_run_scope(self.ctx.sessions, request.dry_run) as session:
            row, result = apply_job(req, self.ctx.settings, session=session)
            return jobs_pb2.ApplyJobResponse(job=convert.job(row, with_manifest=True), result=result)

    @rpc
    def GetJob(self, request: jobs_pb2.JobRef, context: grpc.ServicerContext) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session)
            msg = convert.job(row, with_manifest=True)
            _with_estimates([msg], session=session)
            return msg

    @rpc
    def ListJobs(
        self, request: jobs_pb2.ListJobsRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.ListJobsResponse:
        limit = job_lists.page_size(request)
        page = job_lists.page_of(request)
        with session_scope(self.ctx.sessions) as session:
            # Read before the jobs: the list then holds every change up to it (and maybe more).
            revision = changes_repo.last_revision(session=session)
            f = job_lists.job_filter(request, self._readable(session))
            rows = jobs_repo.find_jobs(f, page, limit + 1, session=session)
            msgs = [convert.job(r) for r in rows[:limit]]
            _with_estimates(msgs, session=session)
        token = job_lists.next_token(page, rows[limit - 1]) if len(rows) > limit else ""
        return jobs_pb2.ListJobsResponse(jobs=msgs, next_page_token=token, revision=revision)

    def _readable(self, session: Session) -> list[str] | None:
        """The queues whose jobs the caller may read; None: every queue."""
        return visible(Action.read_jobs, [q.name for q in queues_repo.list_queues(session=session)])

    @rpc
    def CountJobs(
        self, request: jobs_pb2.CountJobsRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.CountJobsResponse:
        keys = job_lists.group_keys(request)
        with session_scope(self.ctx.sessions) as session:
            revision = changes_repo.last_revision(session=session)
            f = job_lists.job_filter(request, self._readable(session))
            groups = job_counts.count_jobs(f, keys, session=session)
        out = jobs_pb2.CountJobsResponse(revision=revision)
        for values, n in groups:
            out.groups.append(jobs_pb2.JobCount(count=n, **dict(zip(keys, values, strict=True))))
            out.total += n
        return out

    @rpc
    def ListJobDispatches(
        self, request: jobs_pb2.JobRef, context: grpc.ServicerContext
    ) -> jobs_pb2.ListJobDispatchesResponse:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session)
            runs = dispatches_repo.of_job(row.uid, session=session)
        return jobs_pb2.ListJobDispatchesResponse(uid=row.uid, dispatches=[convert.dispatch(d) for d in runs])

    async def WatchJobs(
        self, request: jobs_pb2.WatchJobsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[jobs_pb2.JobEvent]:
        async for event in self.watches.serve(request, context):
            yield event

    async def StreamLogs(
        self, request: jobs_pb2.LogsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[jobs_pb2.LogLines]:
        if self.logs is None:
            raise FailedPrecondition("this hub process serves no agent streams, so no logs")
        async for lines in self.logs(request):
            yield lines

    @rpc
    def CancelJob(self, request: jobs_pb2.JobRef, context: grpc.ServicerContext) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session, action=Action.cancel_jobs)
            _not_a_child(row)
            if cancel_job(row.uid, session=session, reason=f"cancelled by {who()}", principal=who()):
                row = find_job(request, session=session)
        return convert.job(row)

    def _owned(self, row: JobRow, verb: str) -> None:
        if (row.manifest.get("metadata") or {}).get(OWNER_REFERENCES):
            raise FailedPrecondition(
                f"job {row.namespace}/{row.name} belongs to a CronJob or JobFlow, which decides its runs: "
                f"it cannot be {verb} on its own"
            )

    @rpc
    def SuspendJob(self, request: jobs_pb2.JobRef, context: grpc.ServicerContext) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session, action=Action.cancel_jobs)
            self._owned(row, "suspended")
            reason = f"suspended by {who()}"
            if not cancel_job(row.uid, session=session, reason=reason, principal=who(), event="Suspended"):
                raise FailedPrecondition(
                    f"job {row.namespace}/{row.name} has finished ({row.phase}): only an unfinished job "
                    "can be suspended"
                )
            return convert.job(find_job(request, session=session))

    @rpc
    def ResumeJob(self, request: jobs_pb2.JobRef, context: grpc.ServicerContext) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session, action=Action.submit_jobs)
            self._owned(row, "resumed")
            if not resume_job(row.uid, session=session, reason=f"resumed by {who()}", principal=who()):
                raise FailedPrecondition(
                    f"job {row.namespace}/{row.name} is {row.phase}, binding {row.binding_phase}: only a "
                    "suspended (Aborted) job can be resumed"
                )
            return convert.job(find_job(request, session=session))

    @rpc
    def CheckpointJob(
        self, request: jobs_pb2.CheckpointJobRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.Job:
        when = time_field(request, "at")
        at = when.timestamp() if when is not None else None
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request.job, session=session, action=Action.submit_jobs)
            label = f"{row.namespace}/{row.name}"
            job_checkpoint.declare(row.uid, label, at, principal=who(), session=session)
            return convert.job(find_job(request.job, session=session))

    @rpc
    def DeleteJob(
        self, request: jobs_pb2.JobRef, context: grpc.ServicerContext
    ) -> jobs_pb2.DeleteJobResponse:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session, action=Action.delete_jobs)
            _not_a_child(row)
            delete_job(
                row.uid,
                row.binding_phase,
                session=session,
                namespace=row.namespace,
                name=row.name,
                queue=row.queue,
                principal=who(),
            )
        return jobs_pb2.DeleteJobResponse(uid=row.uid)

    @rpc
    def ExplainJob(
        self, request: jobs_pb2.JobRef, context: grpc.ServicerContext
    ) -> jobs_pb2.ExplainJobResponse:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session)
            events = events_repo.job_events(row.uid, session=session)
            waiting = row.binding_phase == BindingPhase.Suspended
            verdicts = placement_verdicts(row, self.ctx.settings, session=session) if waiting else []
        reason, kind = row.reason, row.reason_kind
        if row.binding_phase == BindingPhase.Suspended:
            decision = "Waiting"
            if not reason:
                # A burst of submissions has its reasons written over a few cycles.
                reason, kind = NOT_EXPLAINED_YET, WaitKind.Unexamined.value
        elif row.binding_phase in ADMITTED:
            decision = "Admitted"
            reason = reason or f"admitted to cluster {row.cluster} (generation {row.generation})"
        else:
            decision = "Finished"
        return jobs_pb2.ExplainJobResponse(
            job=convert.job(row),
            decision=decision,
            reason=reason,
            reason_kind=kind,
            events=[convert.event(e) for e in events],
            placement=verdicts,
        )


def _with_estimates(msgs: list[jobs_pb2.Job], *, session: Session) -> None:
    """Waiting jobs get their predicted start (one read for the page)."""
    waiting = {m.uid: m for m in msgs if m.binding_phase == BindingPhase.Suspended.value}
    for uid, e in estimates_repo.for_uids(list(waiting), session=session).items():
        convert.set_estimate(waiting[uid], e.start, e.cluster, e.ahead, e.computed_at)
