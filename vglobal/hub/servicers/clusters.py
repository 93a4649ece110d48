"""ClusterService: member clusters, cordon and drain."""

from __future__ import annotations

import grpc
from sqlalchemy.orm import Session

from vglobal.api.v1 import clusters_pb2, clusters_pb2_grpc
from vglobal.hub import convert
from vglobal.hub.context import HubContext
from vglobal.hub.errors import InvalidArgument, NotFound, rpc
from vglobal.hub.notify import DELIVER, DISPATCH, notify
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.rows import ClusterRow


def _running_counts(session: Session) -> dict[str, int]:
    counts: dict[str, int] = {}
    for b in bindings_repo.holding(session=session):
        if b.cluster:
            counts[b.cluster] = counts.get(b.cluster, 0) + 1
    return counts


class ClusterServicer(clusters_pb2_grpc.ClusterServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _get(self, name: str, session: Session) -> ClusterRow:
        if not name:
            raise InvalidArgument("name: a cluster name is required")
        row = clusters_repo.get_cluster(name, session=session)
        if row is None:
            raise NotFound(f'cluster "{name}" not found')
        return row

    @rpc
    def ListClusters(
        self, request: clusters_pb2.ListClustersRequest, context: grpc.ServicerContext
    ) -> clusters_pb2.ListClustersResponse:
        with session_scope(self.ctx.sessions) as session:
            rows = clusters_repo.list_clusters(session=session)
            counts = _running_counts(session)
        return clusters_pb2.ListClustersResponse(
            clusters=[convert.cluster(r, running_jobs=counts.get(r.name, 0)) for r in rows]
        )

    @rpc
    def GetCluster(
        self, request: clusters_pb2.ClusterRef, context: grpc.ServicerContext
    ) -> clusters_pb2.Cluster:
        with session_scope(self.ctx.sessions) as session:
            row = self._get(request.name, session)
            counts = _running_counts(session)
        return convert.cluster(row, running_jobs=counts.get(row.name, 0), with_nodes=True)

    def _cordon(self, name: str, cordoned: bool) -> clusters_pb2.Cluster:
        with session_scope(self.ctx.sessions) as session:
            self._get(name, session)
            clusters_repo.set_cordoned(name, cordoned, session=session)
            events_repo.add_events(
                [NewEvent("Cordoned" if cordoned else "Uncordoned", cluster=name)], session=session
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
            uids = [b.job_uid for b in bindings_repo.holding(session=session, cluster=request.name)]
            moved = bindings_repo.requeue(uids, session=session, reason=f"cluster {request.name} drained")
            events_repo.add_events(
                [NewEvent("Drained", f"re-queued {len(moved)} jobs", cluster=request.name)]
                + [NewEvent("Requeued", f"cluster {request.name} drained", job_uid=u) for u, _, _ in moved],
                session=session,
            )
            notify(DELIVER, session=session)
            notify(DISPATCH, session=session)
            return convert.cluster(self._get(request.name, session))
