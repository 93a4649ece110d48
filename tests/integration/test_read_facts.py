"""The dispatcher's streamed read of many jobs' facts (``read_facts``: one decoding per distinct stored
form, the rest copies with their own identity) gives exactly what reading each job on its own gives
(``statics`` then ``facts_of``), for jobs of every kind and with every fact, and so does the
snapshot a new leader builds from it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from tests.integration.test_job_facts import MANIFESTS, _classes, _new
from tests.integration.test_sim_facts import CLASSES, MANIFEST
from vglobal.admission import Snapshot
from vglobal.config import HubSettings
from vglobal.hub.dispatch.cache import JobCache
from vglobal.hub.dispatch.facts import JobFacts, Shared, Templates, facts_of, read_facts
from vglobal.hub.dispatch.snapshot import SnapshotReader
from vglobal.hub.submit import new_job
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COPIES = 3  # of each job: copies share their decoded form


def _jobs() -> list[jobs_repo.NewJob]:
    """Every example's jobs, a job with every fact, the manifest shapes the facts are read from
    leniently, and a request past 64 bits (integers stay exact)."""
    kinds = [MANIFEST] + [p.read_text() for p in sorted(EXAMPLES.glob("*.yaml"))]
    parsed = [j for text in kinds for j in parse_manifests(text) if isinstance(j, Job)]
    news = [new_job(j, None, 50) for j in parsed]
    news += [_new(f"m{k}", m) for k, m in enumerate(MANIFESTS.values())]
    big = news[0]
    news.append(replace(big, request={**big.request, "memory": 2**70 + 1}))
    return [
        replace(n, uid=f"j{k}-{c}", name=f"j{k}-{c}", namespace="ns", queue="default", priority=c)
        for k, n in enumerate(news)
        for c in range(COPIES)
    ]


def _seed(sessions: Any) -> list[str]:
    with session_scope(sessions) as session:
        for pc in CLASSES:
            queues_repo.upsert_priority_class(pc, session=session)
        _classes(session.connection())
        news = _jobs()
        jobs_repo.insert_jobs(news, session=session)
        # Each copy created at its own time; the first copy of every third job admitted to a cluster.
        session.execute(
            sa.text(
                "UPDATE jobs SET created_at = now() - make_interval(secs => length(uid) * 7.25 + "
                "CAST(right(uid, 1) AS int) * 0.001)"
            )
        )
        session.execute(
            sa.text(
                "UPDATE resource_bindings SET phase = 'Running', cluster = 'c1', generation = 1 "
                "WHERE job_uid ~ '^j[0-9]*[036]-0$'"
            )
        )
    return [n.uid for n in news]


class _Reference(JobCache):
    """The cache reading each job's facts on its own, as before the streamed read."""

    def _facts(self, uids: list[str], *, session: Session) -> dict[str, JobFacts]:
        self.respecified = set()
        return {s.uid: facts_of(s, self.shared) for s in jobs_repo.statics(uids, session=session)}


def _snapshot(sessions: Any, reader: SnapshotReader) -> Snapshot:
    with session_scope(sessions) as session:
        return reader.read(HubSettings(database_url="unused"), session=session)


def test_the_streamed_read_gives_each_jobs_own_facts(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    uids = _seed(sessions)
    made: Templates = {}
    with session_scope(sessions) as session:
        reference = {s.uid: facts_of(s, Shared()) for s in jobs_repo.statics(uids, session=session)}
        got = {f.uid: f for f in read_facts(uids, Shared(), made, session=session)}
        again = {f.uid: f for f in read_facts(uids[::-1], Shared(), made, session=session)}
    assert len(reference) == len(uids)
    assert got == reference
    assert again == reference
    assert 10 < len(made) <= len(uids) // COPIES  # one decoding per distinct stored form, not per copy
    assert max(f.request["memory"] for f in got.values()) == 2**70 + 1
    first, copy = got["j0-0"], got["j0-1"]
    assert copy.gang is first.gang and copy.pod_requests is first.pod_requests
    assert (copy.uid, copy.name, copy.priority) == ("j0-1", "j0-1", 1) and copy.created != first.created

    streamed = _snapshot(sessions, SnapshotReader())
    plain = _snapshot(sessions, SnapshotReader(jobs=_Reference()))
    assert streamed.running and streamed.pending
    assert (streamed.pending, streamed.running, streamed.queues) == (plain.pending, plain.running, plain.queues)
