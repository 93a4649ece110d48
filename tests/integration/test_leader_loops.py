"""Every leader-only loop in the hub's table of loops (hub/loops.py) runs only on the replica that
holds the leader lock, each checking for itself: a hub whose replica peer holds the lock leaves
untouched what each loop would act on, for as long as each has asked twice; once the lock is free
it takes it and every loop acts. On shutdown every loop of the table ends."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import sqlalchemy as sa

from tests.integration.polling import wait
from tests.integration.test_jobflows import flow, template
from tests.integration.test_snapshot_reads import new_job
from tests.integration.workflow_driver import Cluster, FakeClock, utc
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.loops import LOOPS
from vglobal.hub.server import Hub
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.locks import AdvisoryLock, release_session_lock, try_session_lock
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import jobs as jobs_repo

T0 = utc(2030, 1, 1, 0, 1)
JOB = json.dumps(
    {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "waiting"},
        "spec": {
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                            ]
                        }
                    },
                }
            ]
        },
    }
)
CRON = json.dumps(
    {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "every-minute"},
        # A JobTemplateSpec: the Job's metadata and spec, no apiVersion or kind of its own.
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {k: v for k, v in json.loads(JOB).items() if k in ("metadata", "spec")},
        },
    }
)


ADMITTED = (
    "SELECT b.generation FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid WHERE j.name = 'waiting'"
)


def _scalar(engine: sa.Engine, sql: str) -> object:
    with engine.connect() as conn:
        return conn.execute(sa.text(sql)).scalar()


# What each leader loop does to the state seeded below, observed in the database (each stays done).
EFFECTS: dict[str, Callable[[sa.Engine], bool]] = {
    "dispatcher": lambda e: bool(_scalar(e, ADMITTED)),
    "failover": lambda e: _scalar(e, "SELECT state FROM clusters WHERE name = 'silent'") == "NotReady",
    "cron": lambda e: bool(_scalar(e, "SELECT count(*) FROM jobs j JOIN cron_jobs c ON c.uid = j.owner_uid")),
    "jobflows": lambda e: bool(_scalar(e, "SELECT count(*) FROM jobs WHERE name = 'f-t'")),
    "watch-log": lambda e: bool(_scalar(e, "SELECT last_revision FROM job_watch WHERE id = 1")),
    "retention": lambda e: not _scalar(e, "SELECT count(*) FROM jobs WHERE uid = 'long-done'"),
    "queue-history": lambda e: bool(_scalar(e, "SELECT count(*) FROM queue_samples")),
    # Each job's count moved off the no-binding key when its binding was inserted: folded away.
    "job-counts": lambda e: not _scalar(e, "SELECT count(*) FROM job_counts WHERE binding_phase = ''"),
    # A job no cluster can hold waits: the forecast says it cannot tell when it starts.
    "forecast": lambda e: bool(_scalar(e, "SELECT count(*) FROM job_estimates WHERE start IS NULL")),
}


def _seed(client: Client, engine: sa.Engine, clock: FakeClock) -> None:
    client.submit_job(JOB)
    client.submit_job(JOB.replace('"waiting"', '"too-big"').replace('"cpu": "1"', '"cpu": "100000"'))
    client.apply_cron_job(CRON)
    clock.set(T0 + timedelta(minutes=2))  # its first run is due
    client.apply_job_template(template("t"))
    client.apply_job_flow(flow("f", [{"name": "t"}]))
    with session_scope(make_sessionmaker(engine)) as session:
        clusters_repo.register("silent", session=session, labels={}, nodes=[], free={})
        session.execute(
            sa.text("UPDATE clusters SET last_heartbeat = now() - interval '1 hour' WHERE name = 'silent'")
        )
        jobs_repo.insert_job(new_job("long-done", 1000), session=session)
        session.execute(
            sa.text(
                "UPDATE resource_bindings SET phase = 'Succeeded', finished_at = now() - interval '2 hours' "
                "WHERE job_uid = 'long-done'"
            )
        )


def test_each_leader_loop_waits_for_the_lock_and_each_loop_stops_on_shutdown(
    database_url: str, engine: sa.Engine
) -> None:
    leader_only = {loop.name for loop in LOOPS if loop.leader_only}
    assert set(EFFECTS) == leader_only, "every leader-only loop needs an effect this test observes"
    settings = HubSettings(
        listen="127.0.0.1:0",
        database_url=database_url,
        dispatch_interval=0.2,
        cluster_timeout=600.0,
        finished_job_ttl=3600.0,
        forecast_interval=0.2,
    )
    clock = FakeClock(T0)
    with engine.connect() as peer:  # another replica, holding the leader lock
        assert try_session_lock(peer, AdvisoryLock.HUB_LEADER)
        peer.commit()
        hub = Hub(settings, clock=clock)
        hub.start()
        try:
            with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as client, Cluster(hub):
                _seed(client, engine, clock)
                gated = [r for r in hub.loops if r.loop.leader_only]
                assert {r.loop.name for r in gated} == leader_only
                # A check after the seed and the next one: in between, a loop that led would have
                # acted on what was seeded.
                marks = {r.loop.name: r.state.checks for r in gated}
                for r in gated:
                    assert r.state.wait_checks(marks[r.loop.name] + 2, timeout=30.0), r.loop.name
                acted = {name for name, done in EFFECTS.items() if done(engine)}
                assert acted == set(), f"loops that ran without the leader lock: {sorted(acted)}"

                release_session_lock(peer, AdvisoryLock.HUB_LEADER)
                peer.commit()
                for name, done in EFFECTS.items():
                    wait(lambda done=done: done(engine), timeout=30.0, what=f"the {name} loop's effect")
        finally:
            hub.shutdown()
    alive = [r.loop.name for r in hub.loops if not r.state.ended.is_set() or r.thread.is_alive()]
    assert alive == [], f"loops still running after shutdown: {alive}"
    assert {r.loop.name for r in hub.loops} == {loop.name for loop in LOOPS}
