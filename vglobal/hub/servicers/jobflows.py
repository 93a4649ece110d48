"""JobFlowService: Volcano JobTemplates and JobFlows."""

from __future__ import annotations

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import jobflows_pb2, jobflows_pb2_grpc
from vglobal.hub.auth.access import can, require, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.errors import NotFound, look_up, rpc
from vglobal.hub.flows.apply import apply_flow
from vglobal.hub.job_actions import delete_job
from vglobal.hub.notify import WORKFLOWS, notify
from vglobal.hub.servicers.gone import explained
from vglobal.hub.submit import parse_one
from vglobal.model.jobflow import JobFlow, JobTemplate, parse_job_flow, parse_job_template
from vglobal.model.records import JobFlowRow, JobTemplateRow
from vglobal.model.workflow_status import flow_status_from_json
from vglobal.store.engine import session_scope
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobflows as flows_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent


def _ref_key(ref: jobflows_pb2.FlowObjectRef) -> tuple[str, str]:
    namespace = ref.namespace or "default"
    return namespace, ref.name and f"{namespace}/{ref.name}"


def flow_queues(row: JobFlowRow) -> list[str]:
    """The queues a JobFlow's Jobs go to (from its templates as they were applied)."""
    return sorted({parse_job_template(t).queue for t in row.templates.values()})


def require_all(action: Action, queues: list[str]) -> None:
    for q in queues:
        require(action, queue=q)


def gone(kind: str, namespace: str, name: str, message: str) -> NewEvent:
    """What outlives a deleted object: its deletion, naming it and who deleted it."""
    return NewEvent("Deleted", message, subject=f"{kind} {namespace}/{name}", principal=who())


class JobFlowServicer(jobflows_pb2_grpc.JobFlowServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    # ---- JobTemplates

    def _template_view(self, row: JobTemplateRow) -> jobflows_pb2.JobTemplate:
        return convert.job_template(row, parse_job_template(row.manifest))

    @rpc
    def ApplyJobTemplate(
        self, request: jobflows_pb2.ApplyFlowObjectRequest, context: grpc.ServicerContext
    ) -> jobflows_pb2.ApplyJobTemplateResponse:
        t = parse_one(
            request.manifest,
            JobTemplate,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        require(Action.submit_jobs, queue=t.queue)
        with session_scope(self.ctx.sessions) as session:
            old = flows_repo.get_template(t.namespace, t.name, session=session)
            if old is not None:
                require(Action.submit_jobs, queue=parse_job_template(old.manifest).queue)
            created = flows_repo.upsert_template(t.namespace, t.name, t.raw, session=session)
            row = flows_repo.get_template(t.namespace, t.name, session=session)
            assert row is not None
            return jobflows_pb2.ApplyJobTemplateResponse(
                job_template=self._template_view(row), result="created" if created else "configured"
            )

    @rpc
    def GetJobTemplate(
        self, request: jobflows_pb2.FlowObjectRef, context: grpc.ServicerContext
    ) -> jobflows_pb2.JobTemplate:
        namespace, key = _ref_key(request)
        with session_scope(self.ctx.sessions) as session:
            row = look_up(
                "jobtemplate", key, lambda: flows_repo.get_template(namespace, request.name, session=session)
            )
            require(Action.read_jobs, queue=parse_job_template(row.manifest).queue)
            return self._template_view(row)

    @rpc
    def ListJobTemplates(
        self, request: jobflows_pb2.ListFlowObjectsRequest, context: grpc.ServicerContext
    ) -> jobflows_pb2.ListJobTemplatesResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = flows_repo.list_templates(session=session, namespace=request.namespace)
        views = [self._template_view(r) for r in rows]
        return jobflows_pb2.ListJobTemplatesResponse(
            job_templates=[v for v in views if can(Action.read_jobs, [v.queue])]
        )

    @rpc
    def DeleteJobTemplate(
        self, request: jobflows_pb2.FlowObjectRef, context: grpc.ServicerContext
    ) -> jobflows_pb2.DeleteFlowObjectResponse:
        namespace, key = _ref_key(request)
        with session_scope(self.ctx.sessions) as session:
            row = look_up(
                "jobtemplate", key, lambda: flows_repo.get_template(namespace, request.name, session=session)
            )
            queue = parse_job_template(row.manifest).queue
            require(Action.delete_jobs, queue=queue)
            flows_repo.delete_template(namespace, request.name, session=session)
            events_repo.add_events(
                [gone("jobtemplate", namespace, request.name, f"queue {queue}")], session=session
            )
        return jobflows_pb2.DeleteFlowObjectResponse()

    # ---- JobFlows

    def _find(
        self,
        ref: jobflows_pb2.FlowObjectRef,
        session: Session,
        *,
        action: Action = Action.read_jobs,
        for_update: bool = False,
    ) -> JobFlowRow:
        """The JobFlow, if the caller may ``action`` in every queue its Jobs go to."""
        namespace, key = _ref_key(ref)
        try:
            row = look_up(
                "jobflow",
                key,
                lambda: flows_repo.get_flow(
                    namespace=namespace, name=ref.name, for_update=for_update, session=session
                ),
            )
        except NotFound as exc:
            raise explained(exc, f"jobflow {key}", session=session) from None
        require_all(action, flow_queues(row))
        return row

    def _view(self, row: JobFlowRow, *, session: Session, full: bool = False) -> jobflows_pb2.JobFlow:
        msg = convert.job_flow(row, parse_job_flow(row.manifest), flow_status_from_json(row.status))
        if full:
            msg.events.extend(convert.event(e) for e in events_repo.owner_events(row.uid, session=session))
        return msg

    @rpc
    def ApplyJobFlow(
        self, request: jobflows_pb2.ApplyFlowObjectRequest, context: grpc.ServicerContext
    ) -> jobflows_pb2.ApplyJobFlowResponse:
        flow = parse_one(
            request.manifest,
            JobFlow,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        with session_scope(self.ctx.sessions) as session:
            row, result = apply_flow(flow, principal=who(), now=self.ctx.now(), session=session)
            return jobflows_pb2.ApplyJobFlowResponse(job_flow=self._view(row, session=session), result=result)

    @rpc
    def GetJobFlow(
        self, request: jobflows_pb2.FlowObjectRef, context: grpc.ServicerContext
    ) -> jobflows_pb2.JobFlow:
        with session_scope(self.ctx.sessions) as session:
            return self._view(self._find(request, session), session=session, full=True)

    @rpc
    def ListJobFlows(
        self, request: jobflows_pb2.ListFlowObjectsRequest, context: grpc.ServicerContext
    ) -> jobflows_pb2.ListJobFlowsResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = [
                r
                for r in flows_repo.list_flows(session=session, namespace=request.namespace)
                if can(Action.read_jobs, flow_queues(r))
            ]
            return jobflows_pb2.ListJobFlowsResponse(job_flows=[self._view(r, session=session) for r in rows])

    @rpc
    def DeleteJobFlow(
        self, request: jobflows_pb2.FlowObjectRef, context: grpc.ServicerContext
    ) -> jobflows_pb2.DeleteFlowObjectResponse:
        deleted: list[str] = []
        with session_scope(self.ctx.sessions) as session:
            row = self._find(request, session, action=Action.delete_jobs, for_update=True)
            for j in jobs_repo.owned(row.uid, session=session):
                if delete_job(
                    j.uid,
                    j.binding_phase,
                    session=session,
                    namespace=row.namespace,
                    name=j.name,
                    principal=who(),
                ):
                    deleted.append(j.name)
            events_repo.delete_owner_events(row.uid, session=session)
            message = f"uid {row.uid}" + (f", with {len(deleted)} jobs" if deleted else "")
            events_repo.add_events([gone("jobflow", row.namespace, row.name, message)], session=session)
            flows_repo.delete_flow(row.uid, session=session)
            notify(WORKFLOWS, session=session)
        return jobflows_pb2.DeleteFlowObjectResponse(deleted_jobs=deleted)
