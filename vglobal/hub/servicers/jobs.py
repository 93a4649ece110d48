"""JobService: submit, read, cancel and delete Volcano Jobs."""

from __future__ import annotations

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.hub.context import HubContext
from vglobal.hub.errors import TooLarge, look_up, raise_prefixed, rpc
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, notify
from vglobal.hub.submit import ItemFailed, parse_one, store_jobs
from vglobal.model.binding import ADMITTED, BindingPhase
from vglobal.model.job import Job
from vglobal.model.reasons import WaitKind
from vglobal.model.records import JobRow
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent

MAX_PAGE = 5000
# What ExplainJob says of a waiting job whose reason the dispatcher has not written yet.
NOT_EXPLAINED_YET = (
    "waiting for the dispatcher: no reason recorded yet (after a burst of submissions, reasons are "
    "written over the next few cycles)"
)


def find_job(ref: jobs_pb2.JobRef, *, session: Session) -> JobRow:
    namespace = ref.namespace or "default"
    return look_up(
        "job",
        ref.uid or (ref.name and f"{namespace}/{ref.name}"),
        lambda: jobs_repo.get_job(session=session, uid=ref.uid or None, namespace=namespace, name=ref.name),
        wanted="a job name or uid",
    )


class JobServicer(jobs_pb2_grpc.JobServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _submit_all(
        self, items: list[jobs_pb2.SubmitJobRequest], *, prefix: bool
    ) -> list[jobs_pb2.SubmitJobResponse]:
        """Validate every document, then store them all in one transaction: a bad one stores nothing."""
        parsed = []
        for i, item in enumerate(items):
            try:
                parsed.append(
                    (parse_one(item.manifest, Job, max_bytes=self.ctx.settings.max_manifest_bytes), item)
                )
            except Exception as exc:
                raise_prefixed(exc, f"jobs[{i}]: " if prefix else "")
        with session_scope(self.ctx.sessions) as session:
            try:
                stored = store_jobs([(job, item.request_id or None) for job, item in parsed], session=session)
            except ItemFailed as failed:
                raise_prefixed(failed.error, f"jobs[{failed.index}]: " if prefix else "")
            created = [row for row, new in stored if new]
            events_repo.add_events(
                [
                    NewEvent(
                        "Submitted",
                        f"queue {row.queue}, {sum(t.replicas for t in row.tasks)} pods",
                        job_uid=row.uid,
                    )
                    for row in created
                ],
                session=session,
            )
            if created:
                notify(DISPATCH, session=session)
        return [jobs_pb2.SubmitJobResponse(job=convert.job(row), created=new) for row, new in stored]

    @rpc
    def SubmitJob(
        self, request: jobs_pb2.SubmitJobRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.SubmitJobResponse:
        return self._submit_all([request], prefix=False)[0]

    @rpc
    def SubmitJobs(
        self, request: jobs_pb2.SubmitJobsRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.SubmitJobsResponse:
        if len(request.jobs) > self.ctx.settings.max_batch:
            raise TooLarge(
                f"jobs: {len(request.jobs)} jobs in one batch, "
                f"more than the limit of {self.ctx.settings.max_batch}"
            )
        return jobs_pb2.SubmitJobsResponse(results=self._submit_all(list(request.jobs), prefix=True))

    @rpc
    def GetJob(self, request: jobs_pb2.JobRef, context: grpc.ServicerContext) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            return convert.job(find_job(request, session=session), with_manifest=True)

    @rpc
    def ListJobs(
        self, request: jobs_pb2.ListJobsRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.ListJobsResponse:
        limit = min(request.page_size or 500, MAX_PAGE)
        after = None
        if request.page_token:
            ns, _, name = request.page_token.partition("/")
            after = (ns, name)
        with session_scope(self.ctx.sessions) as session:
            rows = jobs_repo.list_jobs(
                session=session,
                queue=request.queue,
                namespace=request.namespace,
                phase=request.phase,
                cluster=request.cluster,
                after=after,
                limit=limit + 1,
            )
        token = f"{rows[limit - 1].namespace}/{rows[limit - 1].name}" if len(rows) > limit else ""
        return jobs_pb2.ListJobsResponse(jobs=[convert.job(r) for r in rows[:limit]], next_page_token=token)

    @rpc
    def CancelJob(self, request: jobs_pb2.JobRef, context: grpc.ServicerContext) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session)
            if bindings_repo.abort(row.uid, session=session, reason="cancelled by user") is not None:
                jobs_repo.set_phase([row.uid], "Aborted", session=session)
                events_repo.add_events(
                    [NewEvent("Cancelled", "cancelled by user", job_uid=row.uid)], session=session
                )
                notify(DELIVER, session=session)
                notify(FENCE, session=session)
                notify(DISPATCH, session=session)
            row = find_job(request, session=session)
        return convert.job(row)

    @rpc
    def DeleteJob(
        self, request: jobs_pb2.JobRef, context: grpc.ServicerContext
    ) -> jobs_pb2.DeleteJobResponse:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session)
            if row.binding_phase in ADMITTED:
                # Its agent learns on the next sync that the job is gone and stops it.
                notify(DELIVER, session=session)
                notify(FENCE, session=session)
            jobs_repo.delete_job(row.uid, session=session)
            notify(DISPATCH, session=session)
        return jobs_pb2.DeleteJobResponse(uid=row.uid)

    @rpc
    def ExplainJob(
        self, request: jobs_pb2.JobRef, context: grpc.ServicerContext
    ) -> jobs_pb2.ExplainJobResponse:
        with session_scope(self.ctx.sessions) as session:
            row = find_job(request, session=session)
            events = events_repo.job_events(row.uid, session=session)
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
        )
