"""QueueService: Volcano Queues and PriorityClasses."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import TypeVar

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import queues_pb2, queues_pb2_grpc
from vglobal.hub.auth.access import require, visible, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.errors import FailedPrecondition, InvalidArgument, look_up, rpc
from vglobal.hub.notify import DISPATCH, notify
from vglobal.hub.servicers.namespaces import NamespaceMethods
from vglobal.hub.servicers.times import time_field
from vglobal.hub.submit import parse_one
from vglobal.hub.tenant_queues import check_sub_queue, check_sub_queue_delete
from vglobal.model.errors import bounded_list
from vglobal.model.priority_class import PriorityClass
from vglobal.model.queue import Queue
from vglobal.model.records import QueueRow
from vglobal.store.engine import dry_run_scope, session_scope
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queue_samples as samples_repo
from vglobal.store.repo import queue_usage as queue_usage_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent

ROOT = "root"
MAX_SAMPLES = 20000
DAY = timedelta(days=1)
T = TypeVar("T")


def check_tree(queue: Queue, *, session: Session) -> None:
    """The parent must exist, must not be the queue itself or its descendant, and must hold no jobs."""
    parent = queue.parent or ROOT
    if parent == ROOT:
        return
    if parent == queue.name:
        raise InvalidArgument(f'spec.parent: queue "{queue.name}" cannot be its own parent')
    rows = {q.name: q for q in queues_repo.list_queues(session=session)}
    if parent not in rows:
        raise InvalidArgument(f'spec.parent: parent queue "{parent}" not found')
    seen = set()
    cur: str | None = parent
    while cur and cur != ROOT:
        if cur == queue.name:
            raise InvalidArgument(
                f'spec.parent: making "{parent}" the parent of "{queue.name}" would create a cycle'
            )
        if cur in seen:
            break
        seen.add(cur)
        cur = rows[cur].parent if cur in rows else None
    if queues_repo.live_job_count(parent, session=session):
        raise FailedPrecondition(
            f'spec.parent: queue "{parent}" has jobs; only a queue without jobs can have children'
        )


def audit(reason: str, subject: str, message: str = "", *, session: Session) -> None:
    """Record a change to a queue or priority class with who made it."""
    events_repo.add_events([NewEvent(reason, message, subject=subject, principal=who())], session=session)


class QueueServicer(NamespaceMethods, queues_pb2_grpc.QueueServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _view(self, row: QueueRow, *, session: Session) -> queues_pb2.Queue:
        return convert.queue(
            row,
            queues_repo.usage(session=session).get(row.name),
            queue_usage_repo.load(session=session).get(row.name),
        )

    @rpc
    def ApplyQueue(self, request: queues_pb2.ApplyRequest, context: grpc.ServicerContext) -> queues_pb2.Queue:
        queue = parse_one(
            request.manifest,
            Queue,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        with dry_run_scope(self.ctx.sessions, request.dry_run) as session:
            check_tree(queue, session=session)
            check_sub_queue(queue, session=session)
            queues_repo.upsert_queue(queue, session=session)
            audit("QueueApplied", f"queue {queue.name}", session=session)
            notify(DISPATCH, session=session)
            row = queues_repo.get_queue(queue.name, session=session)
            assert row is not None
            return self._view(row, session=session)

    def _get(self, name: str, session: Session) -> QueueRow:
        return look_up("queue", name, lambda: queues_repo.get_queue(name, session=session))

    @rpc
    def GetQueue(self, request: queues_pb2.QueueRef, context: grpc.ServicerContext) -> queues_pb2.Queue:
        with session_scope(self.ctx.sessions) as session:
            row = self._get(request.name, session)
            require(Action.read_queues, queue=row.name)
            return self._view(row, session=session)

    @rpc
    def ListQueues(
        self, request: queues_pb2.ListQueuesRequest, context: grpc.ServicerContext
    ) -> queues_pb2.ListQueuesResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = queues_repo.list_queues(session=session)
            usage = queues_repo.usage(session=session)
            decayed = queue_usage_repo.load(session=session)
        shown = visible(Action.read_queues, [r.name for r in rows])
        if shown is not None:
            rows = [r for r in rows if r.name in set(shown)]
        return queues_pb2.ListQueuesResponse(
            queues=[convert.queue(r, usage.get(r.name), decayed.get(r.name)) for r in rows]
        )

    @rpc
    def DeleteQueue(
        self, request: queues_pb2.DeleteQueueRequest, context: grpc.ServicerContext
    ) -> queues_pb2.DeleteQueueResponse:
        with session_scope(self.ctx.sessions) as session:
            row = self._get(request.name, session)
            check_sub_queue_delete(row.name, row.parent)
            if row.name == "default":
                raise FailedPrecondition('queue "default" cannot be deleted')
            live = queues_repo.live_job_count(row.name, session=session)
            if live:
                raise FailedPrecondition(
                    f'queue "{row.name}" has {live} unfinished jobs; cancel or delete them first'
                )
            kids = queues_repo.children(row.name, session=session)
            if kids:
                raise FailedPrecondition(
                    f'queue "{row.name}" has child queues: {bounded_list(sorted(kids), sep=", ")}'
                )
            # Its finished jobs' records go with it, but only when asked: raising here rolls the
            # deletion back.
            finished = jobs_repo.delete_finished_of_queue(row.name, session=session)
            if finished and not request.force:
                raise FailedPrecondition(
                    f'queue "{row.name}" holds the records of {finished} finished jobs; delete it with '
                    "force to remove them too"
                )
            queues_repo.delete_queue(row.name, session=session)
            queue_usage_repo.forget(row.name, session=session)
            audit(
                "QueueDeleted", f"queue {row.name}", f"with {finished} finished job records", session=session
            )
        return queues_pb2.DeleteQueueResponse(name=row.name, deleted_jobs=finished)

    def _set_state(self, name: str, state: str) -> queues_pb2.Queue:
        with session_scope(self.ctx.sessions) as session:
            self._get(name, session)
            queues_repo.set_state(name, state, session=session)
            audit("QueueOpened" if state == "Open" else "QueueClosed", f"queue {name}", session=session)
            notify(DISPATCH, session=session)
            return self._view(self._get(name, session), session=session)

    @rpc
    def OpenQueue(self, request: queues_pb2.QueueRef, context: grpc.ServicerContext) -> queues_pb2.Queue:
        return self._set_state(request.name, "Open")

    @rpc
    def CloseQueue(self, request: queues_pb2.QueueRef, context: grpc.ServicerContext) -> queues_pb2.Queue:
        return self._set_state(request.name, "Closed")

    @rpc
    def ApplyPriorityClass(
        self, request: queues_pb2.ApplyRequest, context: grpc.ServicerContext
    ) -> queues_pb2.PriorityClass:
        pc = parse_one(
            request.manifest,
            PriorityClass,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        with dry_run_scope(self.ctx.sessions, request.dry_run) as session:
            queues_repo.upsert_priority_class(pc, session=session)
            audit("PriorityClassApplied", f"priorityclass {pc.name}", f"value {pc.value}", session=session)
            row = queues_repo.get_priority_class(pc.name, session=session)
            assert row is not None
            return convert.priority_class(row)

    @rpc
    def DeletePriorityClass(
        self, request: queues_pb2.PriorityClassRef, context: grpc.ServicerContext
    ) -> queues_pb2.PriorityClass:
        with session_scope(self.ctx.sessions) as session:
            # Jobs keep the priority they were given, as Kubernetes' pods do.
            row = look_up(
                "priority class",
                request.name,
                lambda: queues_repo.delete_priority_class(request.name, session=session),
                wanted="a priority class name",
            )
            audit("PriorityClassDeleted", f"priorityclass {row.name}", f"value {row.value}", session=session)
            return convert.priority_class(row)

    @rpc
    def ListPriorityClasses(
        self, request: queues_pb2.ListPriorityClassesRequest, context: grpc.ServicerContext
    ) -> queues_pb2.ListPriorityClassesResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = queues_repo.list_priority_classes(session=session)
        return queues_pb2.ListPriorityClassesResponse(
            priority_classes=[convert.priority_class(r) for r in rows]
        )

    @rpc
    def GetQueueHistory(
        self, request: queues_pb2.QueueHistoryRequest, context: grpc.ServicerContext
    ) -> queues_pb2.QueueHistoryResponse:
        if not 0 <= request.max_samples <= MAX_SAMPLES:
            raise InvalidArgument(f"max_samples: must be between 0 (every sample) and {MAX_SAMPLES}")
        until = time_field(request, "until") or self.ctx.now()
        since = time_field(request, "since") or until - DAY
        if since >= until:
            raise InvalidArgument("since: must be earlier than until")
        with session_scope(self.ctx.sessions) as session:
            if request.name:
                require(Action.read_queues, queue=self._get(request.name, session).name)
                shown: list[str] | None = [request.name]
            else:
                names = [q.name for q in queues_repo.list_queues(session=session)]
                shown = visible(Action.read_queues, names)
            samples = samples_repo.read(session=session, since=since, until=until, queues=shown)
        out = queues_pb2.QueueHistoryResponse()
        for name, group in itertools.groupby(samples, key=lambda s: s.queue):
            kept = thinned(list(group), request.max_samples)
            out.queues.append(
                queues_pb2.QueueHistory(name=name, samples=[convert.queue_sample(s) for s in kept])
            )
        return out


def thinned(samples: list[T], at_most: int) -> list[T]:
    """At most ``at_most`` of ``samples`` (0: all), evenly spread, the first and last kept."""
    if at_most <= 0 or len(samples) <= at_most:
        return samples
    if at_most == 1:
        return samples[-1:]
    step = (len(samples) - 1) / (at_most - 1)
    return [samples[round(i * step)] for i in range(at_most)]
