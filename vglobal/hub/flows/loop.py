"""The JobFlow loop (leader only): looks at each unfinished JobFlow when a job changes or one is applied."""

from __future__ import annotations

import logging

from vglobal.hub import metrics
from vglobal.hub.context import HubContext
from vglobal.hub.flows.look import look_at_flow
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.hub.notify import JOB_CHANGES, WORKFLOWS
from vglobal.store.engine import session_scope
from vglobal.store.repo import jobflows as flows_repo

log = logging.getLogger(__name__)

MIN_GAP = 0.2  # seconds between looks, so a burst of job changes makes one
MAX_WAIT = 10.0  # a look this often without news: a Job that could not be made is tried again


class FlowLoop(LeaderLoop):
    name = "jobflow"
    channels = (WORKFLOWS, JOB_CHANGES)
    min_gap = MIN_GAP
    max_wait = MAX_WAIT

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def tick(self, woken: bool) -> float:
        ctx = self.ctx
        with session_scope(ctx.sessions) as session:
            uids = flows_repo.unfinished_uids(session=session)
        for uid in uids:
            try:
                with session_scope(ctx.sessions) as session:
                    look = look_at_flow(uid, now=ctx.now(), session=session)
            except Exception:
                log.exception("jobflow: the look at JobFlow %s failed", uid)
                continue
            for e in look.events if look is not None else ():
                log.info("jobflow %s: %s: %s", look.flow.key if look else uid, e.reason, e.message)
                if look is not None and e.reason == "Created":  # committed
                    metrics.FLOW_RUNS.labels(look.row.namespace, look.row.name).inc()
        return MAX_WAIT
