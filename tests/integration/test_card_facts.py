"""What the hub's snapshot gives the card fit, read back from Postgres: a MIG card as its agent
reported it (geometries, the one in force, instances taken), a pending job's GPU-type annotations
per gang task (from its pod templates, kept with its placement at submit), and the cards each
running pod holds (what evicting it gives back); and the gangs dispatched but not placed yet that
take cards, with their annotations."""

from __future__ import annotations

import json

import sqlalchemy as sa
import yaml

from vglobal import convert
from vglobal.config import HubSettings
from vglobal.hub.dispatch.snapshot import SnapshotReader
from vglobal.model.cards import CardFree, CardUse, MigCard
from vglobal.model.forms import Gang, Placement
from vglobal.model.mig_fit import MigInstance
from vglobal.model.workloads import parse_run
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import jobs as jobs_repo

SETTINGS = HubSettings(database_url="unused")
MIG_CARD = CardFree(
    40960,
    35840,
    70,
    9,
    10,
    "A100-SXM4-40GB",
    2,
    MigCard(((MigInstance("1g.5gb", 5120, 7),),), 0, (("1g.5gb", 1),)),
)
MANIFEST = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: NAME, namespace: ns}
spec:
  minAvailable: 2
  tasks:
  - name: a
    replicas: 1
    template:
      spec: {containers: [{name: c, image: x, resources: {limits: {volcano.sh/vgpu-number: "1"}}}]}
  - name: b
    replicas: 1
    template:
      metadata: {annotations: {volcano.sh/vgpu-mode: mig, nvidia.com/use-gputype: A100, other: x}}
      spec: {containers: [{name: c, image: x, resources: {limits: {volcano.sh/vgpu-number: "1"}}}]}
"""


def _new_job(name: str) -> jobs_repo.NewJob:
    job = parse_run(yaml.safe_load(MANIFEST.replace("NAME", name)))
    gang = Gang.of(job)
    return jobs_repo.NewJob(
        uid=name,
        namespace="ns",
        name=name,
        request_id=None,
        queue="default",
        priority_class_name=None,
        priority=0,
        min_available=2,
        request=dict(job.gang_request().items()),
        gang=gang,
        pod_requests={t.name: dict(t.pod_request.items()) for t in job.tasks},
        placement=Placement.of(job),
        manifest=yaml.safe_load(MANIFEST.replace("NAME", name)),
        tasks=(),
    )


def test_snapshot_carries_mig_cards_gpu_annotations_and_pod_cards(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    nodes = [{"name": "n0", "allocatable": {"cpu": 64000}}]
    with session_scope(sessions) as session:
        clusters_repo.register("c1", session=session, labels={}, nodes=nodes, free={"n0": {"cpu": 64000}})
        reported = convert.card_of(convert.card_message(MIG_CARD))  # through the wire form
        clusters_repo.heartbeat("c1", {}, session=session, cards_patch={"n0": [reported.to_json()]})
        jobs_repo.insert_job(_new_job("waits"), session=session)
        jobs_repo.insert_job(_new_job("runs"), session=session)
        jobs_repo.insert_job(_new_job("sent"), session=session)  # dispatched, no pod placed yet
        bindings_repo.admit([("runs", "c1"), ("sent", "c1")], session=session)
        pod = {"pod": "runs-b-0", "task": "b", "node": "n0", "phase": "Running", "uid": "runs/1/runs-b-0/0",
               "cards": [CardUse(0, 5120, 30, geometry=0, instance="1g.5gb").to_json()]}  # fmt: skip
        session.execute(
            sa.text("UPDATE resource_bindings SET phase = 'Running' WHERE job_uid = 'runs'"),
        )
        session.execute(
            sa.text("UPDATE jobs SET placements = CAST(:p AS jsonb) WHERE uid = 'runs'"),
            {"p": json.dumps([pod])},
        )
    with session_scope(sessions) as session:
        snap = SnapshotReader().read(SETTINGS, session=session)
    (cluster,) = snap.clusters
    assert cluster.devices == {"n0": (MIG_CARD,)}
    (waits,) = [j for j in snap.pending if j.uid == "waits"]
    assert [dict(h) for h in waits.gpu_hints] == [
        {},
        {"volcano.sh/vgpu-mode": "mig", "nvidia.com/use-gputype": "A100"},
    ]
    ((gang, hints),) = cluster.unplaced_cards  # "sent" takes its cards before new gangs
    assert len(gang) == 2 and [dict(h) for h in hints] == [dict(h) for h in waits.gpu_hints]
    (runs,) = [r for r in snap.running if r.uid == "runs"]
    (running_pod,) = runs.pods
    assert running_pod.cards == (CardUse(0, 5120, 30, geometry=0, instance="1g.5gb"),)
