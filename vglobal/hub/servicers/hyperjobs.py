"""HyperJobService: a HyperJob's status read from its children, and cancel and delete of every
child in one transaction (a HyperJob is submitted through JobService)."""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from sqlalchemy.orm import Session

from vglobal.api.v1 import hyperjobs_pb2, hyperjobs_pb2_grpc
from vglobal.hub.auth.access import can, require, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.errors import NotFound, rpc
from vglobal.hub.job_actions import cancel_job, delete_job
from vglobal.model import hyperjob
from vglobal.model.binding import UNPLACED, BindingPhase
from vglobal.model.hyperjob_status import ChildState, hyperjob_phase
from vglobal.model.reasons import WaitKind
from vglobal.model.records import JobRow
from vglobal.store.engine import session_scope
from vglobal.store.repo import hyperjobs as hyperjobs_repo
from vglobal.store.repo import jobs as jobs_repo


def _annotation(row: JobRow, key: str) -> str:
    return str(((row.manifest.get("metadata") or {}).get("annotations") or {}).get(key) or "")


def _index(row: JobRow) -> int:
    text = _annotation(row, hyperjob.INDEX_ANNOTATION)
    return int(text) if text.isdigit() else 0


def _child(row: JobRow) -> hyperjobs_pb2.HyperJobChild:
    return hyperjobs_pb2.HyperJobChild(
        name=row.name,
        uid=row.uid,
        replicated_job=row.labels.get(hyperjob.REPLICATED_JOB_LABEL, ""),
        index=_index(row),
        cluster=row.cluster or "",
        phase=row.phase,
        binding_phase=row.binding_phase,
        generation=row.generation,
        pending=sum(t.pending for t in row.tasks),
        running=sum(t.running for t in row.tasks),
        succeeded=sum(t.succeeded for t in row.tasks),
        failed=sum(t.failed for t in row.tasks),
        reason=row.reason,
    )


def _preempting(row: JobRow) -> bool:
    """Admitted to its cluster, waiting there for the pods evicted to make it room."""
    return (
        BindingPhase(row.binding_phase) in UNPLACED
        and row.reason_kind in (WaitKind.Preempting.value, WaitKind.Reclaiming.value)
        and bool(row.reason)
    )


def status(name: str, rows: Sequence[JobRow]) -> hyperjobs_pb2.HyperJob:
    """The HyperJob as its children stand (``rows``: all of them, any order)."""
    kids = sorted(rows, key=lambda r: (_index(r), r.name))
    first = kids[0]
    text = _annotation(first, hyperjob.MIN_AVAILABLE_ANNOTATION)
    minimum = int(text) if text.isdigit() else len(kids)
    children = [_child(r) for r in kids]
    states = [
        ChildState(c.name, c.cluster, c.phase, c.pending, c.running, c.succeeded, c.failed) for c in children
    ]
    waiting = next(
        (r.reason for r in kids if r.binding_phase == BindingPhase.Suspended.value and r.reason), ""
    )
    if not waiting:  # admitted in place of victims being evicted: each such child says which, where
        waiting = "; ".join(r.reason for r in kids if _preempting(r))
    return hyperjobs_pb2.HyperJob(
        name=name,
        namespace=first.namespace,
        queue=first.queue,
        phase=hyperjob_phase(states, minimum),
        min_available=minimum,
        failure_policy=_annotation(first, hyperjob.FAILURE_POLICY_ANNOTATION)
        or hyperjob.DEFAULT_FAILURE_POLICY,
        running_children=sum(c.phase == "Running" for c in children),
        children=children,
        waiting_reason=waiting,
    )


class HyperJobServicer(hyperjobs_pb2_grpc.HyperJobServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _find(self, ref: hyperjobs_pb2.HyperJobRef, action: Action, *, session: Session) -> list[JobRow]:
        """Every child of the HyperJob, if the caller may ``action`` in its queue."""
        namespace = ref.namespace or "default"
        rows = hyperjobs_repo.children(namespace, ref.name, session=session) if ref.name else []
        if not rows:
            raise NotFound(f'hyperjob "{namespace}/{ref.name}" not found')
        for queue in sorted({r.queue for r in rows}):
            require(action, queue=queue)
        return rows

    @rpc
    def GetHyperJob(
        self, request: hyperjobs_pb2.HyperJobRef, context: grpc.ServicerContext
    ) -> hyperjobs_pb2.HyperJob:
        with session_scope(self.ctx.sessions) as session:
            return status(request.name, self._find(request, Action.read_jobs, session=session))

    @rpc
    def ListHyperJobs(
        self, request: hyperjobs_pb2.ListHyperJobsRequest, context: grpc.ServicerContext
    ) -> hyperjobs_pb2.ListHyperJobsResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = hyperjobs_repo.children(request.namespace, session=session)
        groups: dict[tuple[str, str], list[JobRow]] = {}
        for r in rows:
            groups.setdefault((r.namespace, r.labels[hyperjob.HYPERJOB_LABEL]), []).append(r)
        out = hyperjobs_pb2.ListHyperJobsResponse()
        for (_, name), kids in sorted(groups.items()):
            if can(Action.read_jobs, {k.queue for k in kids}):  # a list keeps to what it may read
                out.hyperjobs.append(status(name, kids))
        return out

    @rpc
    def CancelHyperJob(
        self, request: hyperjobs_pb2.HyperJobRef, context: grpc.ServicerContext
    ) -> hyperjobs_pb2.HyperJob:
        namespace = request.namespace or "default"
        with session_scope(self.ctx.sessions) as session:
            self._find(request, Action.cancel_jobs, session=session)
            uids = hyperjobs_repo.siblings(namespace, request.name, session=session, lock=True)
            reason = f"cancelled by {who()} with its HyperJob {request.name}"
            for uid in uids:
                cancel_job(uid, session=session, reason=reason, principal=who())
            return status(request.name, list(jobs_repo.by_uids(uids, session=session).values()))

    @rpc
    def DeleteHyperJob(
        self, request: hyperjobs_pb2.HyperJobRef, context: grpc.ServicerContext
    ) -> hyperjobs_pb2.DeleteHyperJobResponse:
        namespace = request.namespace or "default"
        with session_scope(self.ctx.sessions) as session:
            self._find(request, Action.delete_jobs, session=session)
            uids = hyperjobs_repo.siblings(namespace, request.name, session=session, lock=True)
            rows = jobs_repo.by_uids(uids, session=session)
            for uid, row in rows.items():
                delete_job(
                    uid,
                    row.binding_phase,
                    session=session,
                    namespace=row.namespace,
                    name=row.name,
                    queue=row.queue,
                    principal=who(),
                )
        return hyperjobs_pb2.DeleteHyperJobResponse(uids=sorted(rows))
