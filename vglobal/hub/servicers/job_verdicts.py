"""A waiting job's placement verdict per cluster (ExplainJobResponse.placement): the placement
stages run on the clusters as last reported, with the hub's placement file."""

from __future__ import annotations

import time

from sqlalchemy.orm import Session

from vglobal.admission.fit.verdicts import verdict_lines
from vglobal.admission.inputs import pending_job
from vglobal.config import HubSettings
from vglobal.hub.dispatch.clusters import ClusterCache
from vglobal.hub.dispatch.facts import Shared, facts_of
from vglobal.model.records import JobRow
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo.job_statics import statics


def placement_verdicts(row: JobRow, settings: HubSettings, *, session: Session) -> list[str]:
    got = list(statics([row.uid], session=session))
    if not got:
        return []
    now = time.time()
    job = pending_job(
        facts_of(got[0], Shared()),
        waiting_since=row.waiting_since.timestamp(),
        excluded=row.excluded_clusters,
        now=now,
    )
    cache = ClusterCache()
    snaps = [cache.snap(r, ()) for r in clusters_repo.list_clusters(session=session)]
    return verdict_lines(snaps, job, settings.admission_policy(), now)
