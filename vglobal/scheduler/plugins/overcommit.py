"""overcommit: admit PodGroups while their minResources fit in the over-committed idle space.

A queue's ``vglobal.io/overcommit-factor`` (inherited down the queue tree) replaces the plugin's
``overcommit-factor`` argument for its jobs (Volcano's overcommit, queue-scoped).
"""

from __future__ import annotations

import numpy as np

from vglobal.model.queue_tuning import inherited_overcommit
from vglobal.scheduler import quota
from vglobal.scheduler.framework import PERMIT, REJECT, Plugin
from vglobal.scheduler.info import JobInfo
from vglobal.scheduler.session import Session

DEFAULT_FACTOR = 1.2


class OvercommitPlugin(Plugin[Session]):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arg_float("overcommit-factor", DEFAULT_FACTOR)
        if factor < 1.0:
            factor = DEFAULT_FACTOR
        used = ssn.nodes.used.sum(axis=0)
        total = ssn.total.astype(np.float64)

        def idle_at(f: float) -> quota.Vec:
            # the factor applied to whole units, rounded down: the comparisons stay exact
            out: quota.Vec = np.floor(total * f).astype(np.int64) - used
            return out

        idle = idle_at(factor)
        own = _queue_factors(ssn)
        idles = {q: idle_at(f) for q, f in own.items()}
        inqueue = quota.zeros(ssn.index)
        for job in ssn.jobs.values():
            min_res = job.min_resources
            if job.podgroup_phase == "Inqueue":
                inqueue += min_res
            elif job.podgroup_phase == "Running":
                inqueue += quota.pos(min_res - job.allocated)
        self.inqueue = inqueue

        def enqueueable(job: JobInfo) -> int:
            min_req = job.min_resources
            if not min_req.any():
                return PERMIT
            room = idles.get(job.queue, idle)
            return PERMIT if quota.le_on(self.inqueue + min_req, room, min_req > 0) else REJECT

        def enqueued(job: JobInfo) -> None:
            self.inqueue += job.min_resources

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)


def _queue_factors(ssn: Session) -> dict[str, float]:
    """Per queue with a factor of its own or an ancestor's: that factor."""
    out: dict[str, float] = {}
    for name in ssn.queues:
        chain, seen, q = [], set(), ssn.queues.get(name)
        while q is not None and q.name not in seen:
            seen.add(q.name)
            chain.append(q.spec.annotations)
            q = ssn.queues.get(q.parent) if q.parent else None
        got = inherited_overcommit(chain)
        if got is not None:
            out[name] = got
    return out
