"""Recording what agents report. Reports from a run that is no longer current change nothing."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from vglobal.api.v1 import agent_pb2
from vglobal.hub.context import HubContext
from vglobal.hub.notify import DELIVER, DISPATCH, notify
from vglobal.model.phases import BindingPhase, JobPhase
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

FINAL_BINDING = {
    JobPhase.Completed.value: BindingPhase.Succeeded.value,
    JobPhase.Failed.value: BindingPhase.Failed.value,
    JobPhase.Aborted.value: BindingPhase.Aborted.value,
    JobPhase.Terminated.value: BindingPhase.Failed.value,
}
ACCEPTED_FROM = [BindingPhase.Dispatched.value]
RUNNING_FROM = [BindingPhase.Dispatched.value, BindingPhase.Bound.value]
LIVE = [BindingPhase.Dispatched.value, BindingPhase.Bound.value, BindingPhase.Running.value]


def units(u: agent_pb2.Units) -> dict[str, int]:
    return {k: int(v) for k, v in u.values.items() if v}


class StatusRecorder:
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def register(self, reg: agent_pb2.Register) -> None:
        nodes = [
            {
                "name": n.name,
                "labels": dict(n.labels),
                "allocatable": units(n.allocatable),
                "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints],
                "unschedulable": n.unschedulable,
            }
            for n in reg.nodes
        ]
        for n, inv in zip(nodes, reg.nodes, strict=True):
            if inv.gpus:
                n["gpus"] = [
                    {"index": g.index, "memory_mib": g.memory_mib, "model": g.model, "mig": g.mig}
                    for g in inv.gpus
                ]
        free = {n.name: units(n.free) for n in reg.nodes}
        hypernodes = [
            {
                "name": h.name,
                "tier": h.tier,
                "tier_name": h.tier_name,
                "parent": h.parent,
                "nodes": list(h.nodes),
                "children": list(h.children),
            }
            for h in reg.hypernodes
        ]
        with session_scope(self.ctx.sessions) as session:
            clusters_repo.register(
                reg.cluster,
                session=session,
                labels=dict(reg.labels),
                nodes=nodes,
                free=free,
                hypernodes=hypernodes,
            )
            events_repo.add_events(
                [
                    NewEvent(
                        "Registered", f"{len(nodes)} nodes, {len(reg.jobs)} running jobs", cluster=reg.cluster
                    )
                ],
                session=session,
            )
            notify(DISPATCH, session=session)

    def heartbeat(self, cluster: str, hb: agent_pb2.Heartbeat) -> None:
        if hb.api_unreachable:
            # The agent is alive but its cluster is not: record nothing, so the cluster turns
            # NotReady after cluster_timeout and fails over as if its agent were lost.
            log.warning("cluster %s: its agent cannot reach the API server: %s", cluster, hb.api_error)
            return
        patch = {n.name: units(n.free) for n in hb.nodes}
        with session_scope(self.ctx.sessions) as session:
            clusters_repo.heartbeat(cluster, patch, session=session)
            if patch:
                notify(DISPATCH, session=session)

    def accepted(self, cluster: str, msg: agent_pb2.BindingAccepted) -> None:
        with session_scope(self.ctx.sessions) as session:
            if bindings_repo.transition(
                msg.job_uid,
                session=session,
                cluster=cluster,
                generation=msg.generation,
                from_phases=ACCEPTED_FROM,
                to_phase=BindingPhase.Bound.value,
            ):
                events_repo.add_events(
                    [
                        NewEvent(
                            "Bound", f"accepted by cluster {cluster}", job_uid=msg.job_uid, cluster=cluster
                        )
                    ],
                    session=session,
                )

    def rejected(self, cluster: str, msg: agent_pb2.BindingRejected) -> None:
        with session_scope(self.ctx.sessions) as session:
            cur = bindings_repo.current(msg.job_uid, session=session, for_update=True)
            if cur is None or cur[1] != cluster or cur[2] != msg.generation or cur[0] not in LIVE:
                return
            until = time.time() + self.ctx.settings.exclude_for
            bindings_repo.requeue(
                [msg.job_uid],
                session=session,
                reason=f"cluster {cluster} rejected the binding: {msg.reason}",
                exclude_until=until,
            )
            events_repo.add_events(
                [NewEvent("Rejected", msg.reason, job_uid=msg.job_uid, cluster=cluster, kind="Warning")],
                session=session,
            )
            notify(DISPATCH, session=session)
            notify(DELIVER, session=session)

    def status(self, cluster: str, st: agent_pb2.JobStatus) -> bool:
        """Apply a job status if it is from the current run; returns whether the run has finished."""
        final = FINAL_BINDING.get(st.phase)
        with session_scope(self.ctx.sessions) as session:
            cur = bindings_repo.current(st.job_uid, session=session, for_update=True)
            if cur is None or cur[1] != cluster or cur[2] != st.generation or cur[0] not in LIVE:
                log.debug(
                    "ignoring status of stale run %s gen %d from %s", st.job_uid, st.generation, cluster
                )
                return final is not None
            tasks = [
                {
                    "name": t.name,
                    "replicas": t.replicas,
                    "pending": t.pending,
                    "running": t.running,
                    "succeeded": t.succeeded,
                    "failed": t.failed,
                }
                for t in st.tasks
            ]
            placements = [{"pod": p.pod, "node": p.node, "phase": p.phase} for p in st.placements]
            jobs_repo.update_status(
                st.job_uid,
                session=session,
                phase=st.phase,
                tasks=tasks,
                placements=placements,
                retry_count=st.retry_count,
                finished=final is not None,
            )
            if final is not None:
                bindings_repo.transition(
                    st.job_uid,
                    session=session,
                    cluster=cluster,
                    generation=st.generation,
                    from_phases=LIVE,
                    to_phase=final,
                    reason=st.message or f"job {st.phase}",
                )
                notify(DISPATCH, session=session)
            elif st.phase in (JobPhase.Running.value, JobPhase.Restarting.value, JobPhase.Completing.value):
                bindings_repo.transition(
                    st.job_uid,
                    session=session,
                    cluster=cluster,
                    generation=st.generation,
                    from_phases=RUNNING_FROM,
                    to_phase=BindingPhase.Running.value,
                    reason="",
                )
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
        return final is not None
