"""QueueService's Namespace calls: v1 Namespaces whose queue annotation a job naming no queue
goes to (admins apply and delete them; every reader lists them)."""

from __future__ import annotations

import json

import grpc
from sqlalchemy.orm import Session

from vglobal.api.v1 import queues_pb2
from vglobal.hub.auth.access import who
from vglobal.hub.context import HubContext
from vglobal.hub.errors import FailedPrecondition, look_up, rpc
from vglobal.hub.submit import parse_one
from vglobal.model.namespace import Namespace
from vglobal.store.engine import dry_run_scope, session_scope
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import namespaces as namespaces_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.namespaces import NamespaceRow


def _audit(reason: str, subject: str, message: str = "", *, session: Session) -> None:
    events_repo.add_events([NewEvent(reason, message, subject=subject, principal=who())], session=session)


def _view(row: NamespaceRow) -> queues_pb2.Namespace:
    return queues_pb2.Namespace(name=row.name, queue=row.queue, manifest=json.dumps(row.manifest))


class NamespaceMethods:
    ctx: HubContext

    @rpc
    def ApplyNamespace(
        self, request: queues_pb2.ApplyRequest, context: grpc.ServicerContext
    ) -> queues_pb2.Namespace:
        ns = parse_one(
            request.manifest,
            Namespace,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        with dry_run_scope(self.ctx.sessions, request.dry_run) as session:
            namespaces_repo.upsert_namespace(ns, session=session)
            _audit(
                "NamespaceApplied", f"namespace {ns.name}", f"queue {ns.queue or '(none)'}", session=session
            )
            row = namespaces_repo.get_namespace(ns.name, session=session)
            assert row is not None
            return _view(row)

    @rpc
    def ListNamespaces(
        self, request: queues_pb2.ListNamespacesRequest, context: grpc.ServicerContext
    ) -> queues_pb2.ListNamespacesResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = namespaces_repo.list_namespaces(session=session)
        return queues_pb2.ListNamespacesResponse(namespaces=[_view(r) for r in rows])

    @rpc
    def DeleteNamespace(
        self, request: queues_pb2.NamespaceRef, context: grpc.ServicerContext
    ) -> queues_pb2.Namespace:
        with session_scope(self.ctx.sessions) as session:
            live = namespaces_repo.live_job_count(request.name, session=session)
            if live:
                raise FailedPrecondition(
                    f'namespace "{request.name}" has {live} unfinished jobs; cancel or delete them first'
                )
            row = look_up(
                "namespace",
                request.name,
                lambda: namespaces_repo.delete_namespace(request.name, session=session),
                wanted="a namespace name",
            )
            _audit("NamespaceDeleted", f"namespace {row.name}", session=session)
            return _view(row)
