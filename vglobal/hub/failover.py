"""The failover loop (leader only): silent clusters become NotReady, then lose their jobs."""

from __future__ import annotations

import logging
import time

from vglobal.hub.context import HubContext
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, notify
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

INTERVAL = 1.0  # seconds between looks at the clusters' heartbeats


def failover_tick(ctx: HubContext, flagged: set[str] | None = None) -> None:
    """One look at the clusters. ``flagged``: the clusters whose jobs were told they are NotReady
    (the set is kept up to date here); the jobs of those Ready again are told no more."""
    s = ctx.settings
    with session_scope(ctx.sessions) as session:
        silent = clusters_repo.mark_not_ready(s.cluster_timeout, session=session)
        new_events = [
            NewEvent("NotReady", f"no heartbeat for {s.cluster_timeout:g}s", cluster=c, kind="Warning")
            for c in silent
        ]
        for c in silent:  # a running job says so at once, not only when it fails over
            said = (
                f"cluster {c} is NotReady: no heartbeat for {s.cluster_timeout:g}s; its jobs fail over "
                f"if it stays so for {s.failover_after:g}s"
            )
            new_events += [
                NewEvent("ClusterNotReady", said, job_uid=u, cluster=c, kind="Warning")
                for u in bindings_repo.flag_not_ready(c, said, session=session)
            ]
        if flagged is not None:
            flagged.update(silent)
            back = clusters_repo.ready_among(sorted(flagged), session=session) if flagged else []
            if back:
                bindings_repo.unflag_not_ready(back, session=session)
                flagged.difference_update(back)
        for cluster in clusters_repo.failed_over(s.failover_after, session=session):
            uids = bindings_repo.admitted_uids(cluster, session=session)
            if not uids:
                continue
            moved = bindings_repo.requeue(
                uids,
                session=session,
                kind=WaitKind.FailedOver,
                reason=f"cluster {cluster} failed over: NotReady for more than {s.failover_after:g}s",
                exclude_until=time.time() + s.exclude_for,
            )
            log.warning("failing over %d jobs from cluster %s", len(moved), cluster)
            new_events.append(
                NewEvent("FailedOver", f"re-queued {len(moved)} jobs", cluster=cluster, kind="Warning")
            )
            new_events += [
                NewEvent(
                    "Requeued", f"cluster {cluster} is NotReady; generation {gen}", job_uid=u, kind="Warning"
                )
                for u, _, gen in moved
            ]
        events_repo.add_events(new_events, session=session)
        if new_events:
            notify(DISPATCH, session=session)
            notify(DELIVER, session=session)
            notify(FENCE, session=session)


class FailoverLoop(LeaderLoop):
    name = "failover"
    min_gap = INTERVAL
    max_wait = INTERVAL

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.flagged: set[str] = set()

    def lead(self) -> None:
        # Another leader may have flagged jobs meanwhile: look at every cluster's once.
        with session_scope(self.ctx.sessions) as session:
            self.flagged = {c.name for c in clusters_repo.list_clusters(session=session, with_nodes=False)}

    def tick(self, woken: bool) -> float:
        failover_tick(self.ctx, self.flagged)
        return INTERVAL
