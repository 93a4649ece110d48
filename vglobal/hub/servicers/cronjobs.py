"""CronJobService: Volcano CronJobs, their runs and their events."""

from __future__ import annotations

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import cronjobs_pb2, cronjobs_pb2_grpc, jobs_pb2
from vglobal.hub import metrics
from vglobal.hub.auth.access import can, require, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.cron.apply import apply_cron, audit, run_by_hand
from vglobal.hub.errors import NotFound, look_up, rpc
from vglobal.hub.job_actions import delete_job
from vglobal.hub.notify import WORKFLOWS, notify
from vglobal.hub.servicers.gone import explained
from vglobal.hub.submit import parse_one
from vglobal.model.cronjob import CronJob, parse_cron_job
from vglobal.model.records import CronJobRow
from vglobal.model.workflow_status import cron_status_from_json
from vglobal.store.engine import session_scope
from vglobal.store.repo import cronjobs as cron_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent


class CronJobServicer(cronjobs_pb2_grpc.CronJobServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _find(
        self,
        ref: cronjobs_pb2.CronJobRef,
        session: Session,
        *,
        action: Action = Action.read_jobs,
        for_update: bool = False,
    ) -> CronJobRow:
        """The CronJob, if the caller may ``action`` in the queue its runs go to."""
        namespace = ref.namespace or "default"
        try:
            row = look_up(
                "cronjob",
                ref.name and f"{namespace}/{ref.name}",
                lambda: cron_repo.get_cron(
                    namespace=namespace, name=ref.name, for_update=for_update, session=session
                ),
            )
        except NotFound as exc:
            raise explained(exc, f"cronjob {namespace}/{ref.name}", session=session) from None
        require(action, queue=parse_cron_job(row.manifest).queue)
        return row

    def _audit(self, row: CronJobRow, reason: str, message: str, *, session: Session) -> None:
        audit(row, reason, message, principal=who(), now=self.ctx.now(), session=session)

    def _view(self, row: CronJobRow, *, session: Session, full: bool = False) -> cronjobs_pb2.CronJob:
        cron = parse_cron_job(row.manifest)
        status = cron_status_from_json(row.status)
        next_time = None
        if not cron.suspend:
            anchor = status.last_schedule_time or row.created_at
            next_time = cron.schedule.next_after(max(self.ctx.now(), anchor), anchor=anchor)
        msg = convert.cron_job(row, cron, status, next_time)
        if full:
            msg.jobs.extend(convert.job(j) for j in jobs_repo.list_jobs(session=session, owner_uid=row.uid))
            msg.events.extend(convert.event(e) for e in events_repo.owner_events(row.uid, session=session))
        return msg

    @rpc
    def ApplyCronJob(
        self, request: cronjobs_pb2.ApplyCronJobRequest, context: grpc.ServicerContext
    ) -> cronjobs_pb2.ApplyCronJobResponse:
        cron = parse_one(
            request.manifest,
            CronJob,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        require(Action.submit_jobs, queue=cron.queue)
        with session_scope(self.ctx.sessions) as session:
            row, result = apply_cron(cron, principal=who(), now=self.ctx.now(), session=session)
            return cronjobs_pb2.ApplyCronJobResponse(cron_job=self._view(row, session=session), result=result)

    @rpc
    def GetCronJob(
        self, request: cronjobs_pb2.CronJobRef, context: grpc.ServicerContext
    ) -> cronjobs_pb2.CronJob:
        with session_scope(self.ctx.sessions) as session:
            return self._view(self._find(request, session), session=session, full=True)

    @rpc
    def ListCronJobs(
        self, request: cronjobs_pb2.ListCronJobsRequest, context: grpc.ServicerContext
    ) -> cronjobs_pb2.ListCronJobsResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = [
                r
                for r in cron_repo.list_crons(session=session, namespace=request.namespace)
                if can(Action.read_jobs, [parse_cron_job(r.manifest).queue])
            ]
            return cronjobs_pb2.ListCronJobsResponse(cron_jobs=[self._view(r, session=session) for r in rows])

    @rpc
    def DeleteCronJob(
        self, request: cronjobs_pb2.DeleteCronJobRequest, context: grpc.ServicerContext
    ) -> cronjobs_pb2.DeleteCronJobResponse:
        deleted: list[str] = []
        with session_scope(self.ctx.sessions) as session:
            row = self._find(request.ref, session, action=Action.delete_jobs, for_update=True)
            queue = parse_cron_job(row.manifest).queue
            if request.cascade:
                for j in jobs_repo.owned(row.uid, session=session):
                    gone = delete_job(
                        j.uid,
                        j.binding_phase,
                        session=session,
                        namespace=row.namespace,
                        name=j.name,
                        queue=queue,
                        principal=who(),
                    )
                    if gone:
                        deleted.append(j.name)
            else:
                jobs_repo.disown(row.uid, session=session)
            events_repo.delete_owner_events(row.uid, session=session)
            # Its own events go with it; this one outlives it, naming it and who deleted it.
            events_repo.add_events(
                [
                    NewEvent(
                        "Deleted",
                        f"uid {row.uid}, queue {queue}" + (f", with {len(deleted)} jobs" if deleted else ""),
                        subject=f"cronjob {row.namespace}/{row.name}",
                        principal=who(),
                    )
                ],
                session=session,
            )
            cron_repo.delete_cron(row.uid, session=session)
            notify(WORKFLOWS, session=session)
        return cronjobs_pb2.DeleteCronJobResponse(uid=row.uid, deleted_jobs=deleted)

    def _suspend(self, ref: cronjobs_pb2.CronJobRef, suspend: bool) -> cronjobs_pb2.CronJob:
        with session_scope(self.ctx.sessions) as session:
            row = self._find(ref, session, action=Action.submit_jobs, for_update=True)
            cron_repo.set_suspend(row.uid, suspend, look_at=self.ctx.now(), session=session)
            what = "Suspended" if suspend else "Resumed"
            self._audit(row, what, f"{what.lower()} by {who()}", session=session)
            notify(WORKFLOWS, session=session)
            new = cron_repo.get_cron(uid=row.uid, session=session)
            assert new is not None
            return self._view(new, session=session)

    @rpc
    def SuspendCronJob(
        self, request: cronjobs_pb2.CronJobRef, context: grpc.ServicerContext
    ) -> cronjobs_pb2.CronJob:
        return self._suspend(request, True)

    @rpc
    def ResumeCronJob(
        self, request: cronjobs_pb2.CronJobRef, context: grpc.ServicerContext
    ) -> cronjobs_pb2.CronJob:
        return self._suspend(request, False)

    @rpc
    def CreateJobFromCronJob(
        self, request: cronjobs_pb2.CreateJobFromCronJobRequest, context: grpc.ServicerContext
    ) -> jobs_pb2.Job:
        with session_scope(self.ctx.sessions) as session:
            row = self._find(request.cron_job, session, action=Action.submit_jobs)
            made = run_by_hand(row, request.job_name, principal=who(), now=self.ctx.now(), session=session)
        metrics.CRON_RUNS.labels(row.namespace, row.name).inc()  # committed
        return convert.job(made)
