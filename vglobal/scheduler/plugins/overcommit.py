"""overcommit: admit PodGroups while their minResources fit in the over-committed idle space."""

from __future__ import annotations

import numpy as np

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
        # the factor applied to whole units, rounded down: the comparisons stay exact
        idle = np.floor(ssn.total.astype(np.float64) * factor).astype(np.int64) - used
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
            return PERMIT if quota.le_on(self.inqueue + min_req, idle, min_req > 0) else REJECT

        def enqueued(job: JobInfo) -> None:
            self.inqueue += job.min_resources

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)
