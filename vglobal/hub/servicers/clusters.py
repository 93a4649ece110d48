"""ClusterService: member clusters, cordon, drain and delete."""

from __future__ import annotations

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import clusters_pb2, clusters_pb2_grpc
from vglobal.hub.auth.access import visible, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.errors import FailedPrecondition, InvalidArgument, look_up, rpc
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, notify
from vglobal.model.reasons import WaitKind
from vglobal.model.records import ClusterRow
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent


class ClusterServicer(clusters_pb2_grpc.ClusterServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _get(self, name: str, session: Session) -> ClusterRow:
        return look_up("cluster", name, lambda: clusters_repo.get_cluster(name, session=session))

    @staticmethod
    def _readable(session: Session) -> list[str] | None:
        """Whose jobs the caller may read decides which jobs it is told of and counted, as ListJobs
        does (None: every queue)."""
        return visible(Action.read_jobs, [q.name for q in queues_repo.list_queues(session=session)])

    @rpc
    def ListClusters(
        self, request: clusters_pb2.ListClustersRequest, context: grpc.ServicerContext
    ) -> clusters_pb2.ListClustersResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = clusters_repo.list_clusters(session=session)
            counts = bindings_repo.admitted_per_cluster(session=session, queues=self._readable(session))
        return clusters_pb2.ListClustersResponse(
            clusters=[convert.cluster(r, running_jobs=counts.get(r.name, 0)) for r in rows]
        )

    @rpc
    def GetCluster(
        self, request: clusters_pb2.ClusterRef, context: grpc.ServicerContext
    ) -> clusters_pb2.Cluster:
        with session_scope(self.ctx.sessions) as session:
            row = self._get(request.name, session)
            readable = self._readable(session)
            counts = bindings_repo.admitted_per_cluster(session=session, queues=readable)
            placed = clusters_repo.placed_jobs(row.name, readable, session=session)
        msg = convert.cluster(row, running_jobs=counts.get(row.name, 0), with_nodes=True)
        msg.work.extend(convert.node_work(placed))
        return msg

    def _cordon(self, name: str, cordoned: bool) -> clusters_pb2.Cluster:
        with session_scope(self.ctx.sessions) as session:
            self._get(name, session)
            clusters_repo.set_cordoned(name, cordoned, session=session)
            events_repo.add_events(
                [NewEvent("Cordoned" if cordoned else "Uncordoned", cluster=name, principal=who())],
                session=session,
            )
            notify(DISPATCH, session=session)
            return convert.cluster(self._get(name, session))

    @rpc
    def CordonCluster(
        self, request: clusters_pb2.ClusterRef, context: grpc.ServicerContext
    ) -> clusters_pb2.Cluster:
        return self._cordon(request.name, True)

    @rpc
    def UncordonCluster(
        self, request: clusters_pb2.ClusterRef, context: grpc.ServicerContext
    ) -> clusters_pb2.Cluster:
        return self._cordon(request.name, False)

    @rpc
    def DrainCluster(
        self, request: clusters_pb2.ClusterRef, context: grpc.ServicerContext
    ) -> clusters_pb2.Cluster:
        with session_scope(self.ctx.sessions) as session:
            self._get(request.name, session)
            clusters_repo.set_cordoned(request.name, True, session=session)
            uids = bindings_repo.admitted_uids(request.name, session=session)
            moved = bindings_repo.requeue(
                uids, session=session, kind=WaitKind.Drained, reason=f"cluster {request.name} drained"
            )
            events_repo.add_events(
                [NewEvent("Drained", f"re-queued {len(moved)} jobs", cluster=request.name, principal=who())]
                + [
                    NewEvent("Requeued", f"cluster {request.name} drained", job_uid=u, principal=who())
                    for u, _, _ in moved
                ],
                session=session,
            )
            notify(DELIVER, session=session)
            notify(FENCE, session=session)
            notify(DISPATCH, session=session)
            return convert.cluster(self._get(request.name, session))

    @rpc
    def DeleteCluster(
        self, request: clusters_pb2.DeleteClusterRequest, context: grpc.ServicerContext
    ) -> clusters_pb2.DeleteClusterResponse:
        name = request.name
        if not name:
            raise InvalidArgument("name: a cluster name is required")
        if request.drain and request.force:
            raise InvalidArgument("drain and force: give one of them, not both")
        with session_scope(self.ctx.sessions) as session:
            self._get(name, session)
            uids = bindings_repo.admitted_uids(name, session=session)
            if uids and not (request.drain or request.force):
                raise FailedPrecondition(
                    f"cluster {name} has {len(uids)} unfinished jobs admitted to it: delete it with drain "
                    "(--drain) to re-queue them first, or force (--force) to re-queue them as failed over"
                )
            if request.drain:
                kind, said, event = WaitKind.Drained, f"cluster {name} drained and deleted", "Requeued"
            else:
                kind, said, event = WaitKind.FailedOver, f"cluster {name} deleted (forced)", "FailedOver"
            moved = bindings_repo.requeue(uids, session=session, kind=kind, reason=said)
            clusters_repo.delete_cluster(name, session=session)
            events_repo.add_events(
                [NewEvent("Deleted", f"re-queued {len(moved)} jobs", cluster=name, principal=who())]
                + [NewEvent(event, said, job_uid=u, principal=who()) for u, _, _ in moved],
                session=session,
            )
            notify(DELIVER, session=session)
            notify(FENCE, session=session)
            notify(DISPATCH, session=session)
        return clusters_pb2.DeleteClusterResponse(name=name, requeued=len(moved))
