"""The simulator's admission input is the hub's: a job stored through the hub's submit path and read
back by the dispatcher (``statics``, ``facts_of``) gives the same facts as the simulator makes of the
same job without a database (``Submission.facts``), and so the same PendingJob and RunningJob."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import sqlalchemy as sa

from vglobal.admission.inputs import Shared, admitted_job, pending_job
from vglobal.hub.dispatch.facts import facts_of
from vglobal.hub.submit import new_job
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifests
from vglobal.model.priority_class import PriorityClass
from vglobal.sim.inputs import Submission
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo

MANIFEST = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: rich
  namespace: team
  annotations: {vglobal.io/clusters: "east,west"}
spec:
  minAvailable: 3
  priorityClassName: batch
  networkTopology: {mode: hard, highestTierAllowed: 2}
  tasks:
  - name: ps
    replicas: 1
    template:
      metadata:
        labels: {role: ps}
        annotations: {volcano.sh/preemptable: "false"}
      spec:
        priorityClassName: urgent
        containers: [{name: c, image: x, resources: {requests: {cpu: "2", memory: 4Gi}}}]
  - name: worker
    replicas: 4
    template:
      metadata: {labels: {role: worker}}
      spec:
        preemptionPolicy: Never
        affinity:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {role: worker}}
              topologyKey: kubernetes.io/hostname
        containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "1", cpu: "1"}}}]
"""
CLASSES = (
    PriorityClass(name="batch", value=50, preemption_policy="Never"),
    PriorityClass(name="urgent", value=900),
)
CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_the_simulators_facts_are_the_ones_the_hub_reads_back(engine: sa.Engine) -> None:
    (job,) = parse_manifests(MANIFEST)
    assert isinstance(job, Job)
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        for pc in CLASSES:
            queues_repo.upsert_priority_class(pc, session=session)
        new = replace(new_job(job, None, 50), uid="u1")
        jobs_repo.insert_jobs([new], session=session)
        session.execute(sa.text("UPDATE jobs SET created_at = :t WHERE uid = 'u1'"), {"t": CREATED})
    with session_scope(sessions) as session:
        (static,) = list(jobs_repo.statics(["u1"], session=session))
    hub = facts_of(static, Shared())
    sim = Submission("u1", job, 50, 0.0, "Never", {c.name: c.value for c in CLASSES}).facts(
        CREATED.timestamp()
    )
    assert sim == hub
    # facts the dispatcher reads beyond the plain columns really are there
    assert hub.unpreemptable == frozenset({"ps"}) and dict(hub.task_priorities) == {"ps": 900}
    assert (
        hub.preemption_policy == "Never" and hub.anti_affinity and hub.allowed == frozenset({"east", "west"})
    )
    assert pending_job(sim, waiting_since=1.0, excluded=None, now=2.0) == pending_job(
        hub, waiting_since=1.0, excluded=None, now=2.0
    )
    pods = [{"pod": "rich-ps-0", "task": "ps", "node": "n1", "phase": "Running", "uid": "p1"}]
    kw = {"cluster": "east", "placements": pods, "evictions": [], "dispatched_at": 3.0}
    assert admitted_job(sim, Shared(), **kw) == admitted_job(hub, Shared(), **kw)  # type: ignore[arg-type]
