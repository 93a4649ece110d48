"""Recording what agents report. Reports from a run that is no longer current change nothing, and
neither do reports from a stream that no longer speaks for its cluster (``stream`` is its id)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import agent_pb2
from vglobal.hub.context import HubContext
from vglobal.hub.errors import AlreadyExists, HubError
from vglobal.hub.notify import DELIVER, DISPATCH, notify
from vglobal.model.binding import FINISHED, BindingPhase, reported
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

# A stream that has not heartbeated for this many intervals may be taken over by its own identity.
MISSED_HEARTBEATS = 3


class Superseded(HubError):
    """Another stream now speaks for the cluster: this one is closed."""

    code = grpc.StatusCode.ABORTED


class StatusRecorder:
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def register(self, reg: agent_pb2.Register, *, stream: str, identity: str) -> None:
        """Record the inventory and make ``stream`` the cluster's; ALREADY_EXISTS while another
        stream is live (see clusters_repo.register)."""
        nodes = convert.node_records(reg.nodes)
        interval = self.ctx.settings.heartbeat_interval
        with session_scope(self.ctx.sessions) as session:
            if not clusters_repo.register(
                reg.cluster,
                session=session,
                labels=dict(reg.labels),
                nodes=nodes,
                free={n.name: convert.units_of(n.free) for n in reg.nodes},
                hypernodes=convert.hypernode_records(reg.hypernodes),
                stream=stream,
                identity=identity,
                stale_after=MISSED_HEARTBEATS * interval,
                dead_after=max(self.ctx.settings.cluster_timeout, MISSED_HEARTBEATS * interval),
            ):
                raise AlreadyExists(
                    f'cluster "{reg.cluster}" already has a live agent stream; another may take over only '
                    f"with the same identity once that one has missed {MISSED_HEARTBEATS} heartbeats"
                )
            message = f"{len(nodes)} nodes, {len(reg.jobs)} running jobs"
            events_repo.add_events(
                [NewEvent("Registered", message, cluster=reg.cluster, principal=identity)], session=session
            )
            notify(DISPATCH, session=session)

    def release(self, cluster: str, stream: str) -> None:
        with session_scope(self.ctx.sessions) as session:
            clusters_repo.release(cluster, stream, session=session)

    def _check_live(self, cluster: str, stream: str, session: Session) -> None:
        if not clusters_repo.speaks_for(cluster, stream, session=session):
            raise Superseded(f'another agent stream now speaks for cluster "{cluster}"')

    def heartbeat(self, cluster: str, hb: agent_pb2.Heartbeat, *, stream: str) -> None:
        if hb.api_unreachable:
            # The agent is alive but its cluster is not: record nothing, so the cluster turns
            # NotReady after cluster_timeout and fails over as if its agent were lost.
            log.warning("cluster %s: its agent cannot reach the API server: %s", cluster, hb.api_error)
            return
        patch = {n.name: convert.units_of(n.free) for n in hb.nodes}
        with session_scope(self.ctx.sessions) as session:
            if not clusters_repo.heartbeat(cluster, patch, session=session, stream=stream):
                raise Superseded(f'another agent stream now speaks for cluster "{cluster}"')
            if patch:
                notify(DISPATCH, session=session)

    def accepted(self, cluster: str, msg: agent_pb2.BindingAccepted, *, stream: str) -> None:
        with session_scope(self.ctx.sessions) as session:
            self._check_live(cluster, stream, session)
            if bindings_repo.transition(
                msg.job_uid,
                session=session,
                cluster=cluster,
                generation=msg.generation,
                to_phase=BindingPhase.Bound,
            ):
                events_repo.add_events(
                    [
                        NewEvent(
                            "Bound", f"accepted by cluster {cluster}", job_uid=msg.job_uid, cluster=cluster
                        )
                    ],
                    session=session,
                )

    def rejected(self, cluster: str, msg: agent_pb2.BindingRejected, *, stream: str) -> None:
        with session_scope(self.ctx.sessions) as session:
            self._check_live(cluster, stream, session)
            ref = bindings_repo.current(msg.job_uid, session=session, for_update=True)
            if ref is None or not ref.is_current(cluster, msg.generation):
                return
            until = time.time() + self.ctx.settings.exclude_for
            bindings_repo.requeue(
                [msg.job_uid],
                session=session,
                kind=WaitKind.Rejected,
                reason=f"cluster {cluster} rejected the binding: {msg.reason}",
                exclude_until=until,
            )
            events_repo.add_events(
                [NewEvent("Rejected", msg.reason, job_uid=msg.job_uid, cluster=cluster, kind="Warning")],
                session=session,
            )
            notify(DISPATCH, session=session)
            notify(DELIVER, session=session)

    def status(self, cluster: str, st: agent_pb2.JobStatus, *, stream: str) -> None:
        """Apply a job status if it is from the current run."""
        target = reported(st.phase)
        finished = target in FINISHED
        with session_scope(self.ctx.sessions) as session:
            self._check_live(cluster, stream, session)
            ref = bindings_repo.current(st.job_uid, session=session, for_update=True)
            if ref is None or not ref.is_current(cluster, st.generation):
                log.debug(
                    "ignoring status of stale run %s gen %d from %s", st.job_uid, st.generation, cluster
                )
                return
            jobs_repo.update_status(
                st.job_uid,
                session=session,
                phase=st.phase,
                tasks=[convert.task_counts(t) for t in st.tasks],
                placements=[convert.pod_placement(p) for p in st.placements],
                retry_count=st.retry_count,
                finished=finished,
            )
            if target is not None and target is not ref.phase:
                bindings_repo.transition(
                    st.job_uid,
                    session=session,
                    cluster=cluster,
                    generation=st.generation,
                    to_phase=target,
                    reason=(st.message or f"job {st.phase}") if finished else "",
                )
            if finished:
                notify(DISPATCH, session=session)
            events_repo.add_events(
                [
                    NewEvent(
                        e.reason,
                        e.message,
                        job_uid=st.job_uid,
                        cluster=cluster,
                        kind=e.kind or "Normal",
                        source=f"agent/{cluster}",
                        time=datetime.fromtimestamp(e.time, UTC) if e.time else None,
                    )
                    for e in st.events
                ],
                session=session,
            )
