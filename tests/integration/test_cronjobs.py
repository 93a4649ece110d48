"""CronJobs in a real hub on a real Postgres, its clock moved by the test: schedules, concurrency
policies, missed runs, suspension, history limits, time zones across DST changes, a clock that jumps
back, two leaders at once. Runs are real Jobs, dispatched to a scripted cluster that finishes them."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from typing import Any

import grpc
import pytest
import sqlalchemy as sa

from tests.integration.polling import wait
from tests.integration.workflow_driver import Cluster, FakeClock, clock_hub, tick, utc
from vglobal.client import Client, VGlobalError
from vglobal.hub.cron.look import look_at_cron
from vglobal.hub.server import Hub
from vglobal.store.engine import session_scope

T0 = utc(2030, 1, 1, 0, 1)


def cron(name: str, schedule: str = "*/5 * * * *", **spec: Any) -> str:
    task = {
        "name": "main",
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]
            }
        },
    }
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, **spec, "jobTemplate": {"spec": {"tasks": [task]}}},
    }
    return json.dumps(doc)


def run(name: str, at: datetime) -> str:
    return f"{name}-{int(at.timestamp()) // 60}"


def jobs(client: Client) -> dict[str, str]:
    return {j.name: j.phase for j in client.list_jobs()}


def events(client: Client, name: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in client.get_cron_job(name).events]


@pytest.fixture
def hub_clock(database_url: str) -> Any:
    with clock_hub(database_url, T0) as hc:
        yield hc


@pytest.fixture
def hub_client(hub_clock: tuple[Hub, FakeClock]) -> Any:
    hub, _ = hub_clock
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
        yield c


def test_allow_runs_each_time_under_its_name_and_keeps_the_history_limits(
    hub_clock: tuple[Hub, FakeClock], hub_client: Client, engine: sa.Engine
) -> None:
    hub, clock = hub_clock
    assert hub_client.apply_cron_job(cron("c", successfulJobsHistoryLimit=1)).result == "created"
    with Cluster(hub) as east:
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 5, 10), "c")
        first = run("c", utc(2030, 1, 1, 0, 5))
        assert set(jobs(hub_client)) == {first}
        job = json.loads(hub_client.get_job(first).manifest)
        assert (
            job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == "2030-01-01T00:05:00Z"
        )
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 10, 10), "c")
        second = run("c", utc(2030, 1, 1, 0, 10))
        assert set(hub_client.get_cron_job("c").active) == {first, second}  # Allow: both run
        east.finish(first)
        east.finish(second)
        # One successful run is kept: the older one goes once both have completed.
        wait(lambda: set(jobs(hub_client)) == {second}, what="the older run deleted")
        c = hub_client.get_cron_job("c")
        assert list(c.active) == []
        assert c.last_schedule_time.ToDatetime().isoformat() == "2030-01-01T00:10:00"
        assert ("SuccessfulDelete", f"deleted job {first}") in events(hub_client, "c")


def test_forbid_holds_a_run_back_and_a_deadline_gives_missed_runs_up(
    hub_clock: tuple[Hub, FakeClock], hub_client: Client, engine: sa.Engine
) -> None:
    hub, clock = hub_clock
    hub_client.apply_cron_job(cron("f", concurrencyPolicy="Forbid", startingDeadlineSeconds=120))
    with Cluster(hub) as east:
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 5, 10), "f")
        first = run("f", utc(2030, 1, 1, 0, 5))
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 10, 10), "f")
        assert set(jobs(hub_client)) == {first}  # held back while the first one runs
        assert any(r == "JobAlreadyActive" for r, _ in events(hub_client, "f"))
        east.finish(first)
        # The held run starts once the first finishes, still within its deadline.
        second = run("f", utc(2030, 1, 1, 0, 10))
        wait(lambda: second in jobs(hub_client), what="the held-back run")
        east.finish(second)
        wait(lambda: not hub_client.get_cron_job("f").active, what="no active run")
        # Down for a while: 00:15..00:30 unmet; only the latest starts, the rest are reported.
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 31), "f")
        third = run("f", utc(2030, 1, 1, 0, 30))
        assert set(jobs(hub_client)) == {first, second, third}
        assert ("MissSchedule", "missed 3 scheduled runs") in events(hub_client, "f")
        east.finish(third)
        wait(lambda: not hub_client.get_cron_job("f").active, what="no active run")
        # 00:45 is 180 s late at 00:48, past the 120 s deadline: nothing starts.
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 48), "f")
        assert len(jobs(hub_client)) == 3
        assert any(
            r == "MissSchedule" and "past startingDeadlineSeconds" in m for r, m in events(hub_client, "f")
        )
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 50, 5), "f")
        assert run("f", utc(2030, 1, 1, 0, 50)) in jobs(hub_client)


def test_replace_cancels_the_running_one_and_starts_the_new_one(
    hub_clock: tuple[Hub, FakeClock], hub_client: Client, engine: sa.Engine
) -> None:
    hub, clock = hub_clock
    hub_client.apply_cron_job(cron("r", concurrencyPolicy="Replace"))
    with Cluster(hub) as east:
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 5, 10), "r")
        first = run("r", utc(2030, 1, 1, 0, 5))
        uid, gen = east.dispatched(first)
        tick(hub, clock, engine, utc(2030, 1, 1, 0, 10, 10), "r")
        second = run("r", utc(2030, 1, 1, 0, 10))
        assert jobs(hub_client) == {first: "Aborted", second: "Pending"}
        wait(lambda: (uid, gen) in east.agent.cancels(), what="the replaced run stopped on its cluster")
        assert list(hub_client.get_cron_job("r").active) == [second]


def test_suspended_nothing_runs_resumed_only_the_latest_missed_and_a_clock_going_back_repeats_nothing(
    hub_clock: tuple[Hub, FakeClock], hub_client: Client, engine: sa.Engine
) -> None:
    hub, clock = hub_clock
    hub_client.apply_cron_job(cron("s"))
    assert hub_client.suspend_cron_job("s").suspend
    for minute in (5, 10, 15):
        tick(hub, clock, engine, utc(2030, 1, 1, 0, minute, 30), "s")
    assert jobs(hub_client) == {}
    assert not hub_client.get_cron_job("s").HasField("next_schedule_time")
    before = hub_client.get_cron_job("s").manifest
    assert json.loads(before)["spec"]["suspend"] is True
    clock.set(utc(2030, 1, 1, 0, 22))
    hub_client.resume_cron_job("s")
    latest = run("s", utc(2030, 1, 1, 0, 20))
    wait(lambda: set(jobs(hub_client)) == {latest}, what="the latest missed run, alone")
    tick(hub, clock, engine, utc(2030, 1, 1, 0, 3), "s")  # the clock jumps back
    tick(hub, clock, engine, utc(2030, 1, 1, 0, 21), "s")
    assert set(jobs(hub_client)) == {latest}
    tick(hub, clock, engine, utc(2030, 1, 1, 0, 25, 1), "s")
    assert set(jobs(hub_client)) == {latest, run("s", utc(2030, 1, 1, 0, 25))}


def test_time_zone_across_both_dst_changes(database_url: str, engine: sa.Engine) -> None:
    """02:30 in Berlin: skipped the day it does not exist, run once the day it happens twice."""
    with clock_hub(database_url, utc(2030, 3, 29, 12)) as (hub, clock):
        c = Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1)
        c.apply_cron_job(cron("berlin", "30 2 * * *", timeZone="Europe/Berlin"))
        tick(hub, clock, engine, utc(2030, 3, 30, 1, 31), "berlin")  # 02:31 CET
        tick(hub, clock, engine, utc(2030, 3, 31, 1, 31), "berlin")  # 03:31 CEST: 02:30 never was
        tick(hub, clock, engine, utc(2030, 4, 1, 0, 31), "berlin")  # 02:31 CEST
        assert set(jobs(c)) == {run("berlin", utc(2030, 3, 30, 1, 30)), run("berlin", utc(2030, 4, 1, 0, 30))}
        tick(hub, clock, engine, utc(2030, 10, 27, 0, 31), "berlin")  # 02:31 CEST, the first pass
        tick(hub, clock, engine, utc(2030, 10, 27, 1, 31), "berlin")  # 02:31 CET, the second
        autumn = {n for n in jobs(c) if n.startswith("berlin-")} - {
            run("berlin", utc(2030, 3, 30, 1, 30)),
            run("berlin", utc(2030, 4, 1, 0, 30)),
        }
        assert autumn == {run("berlin", utc(2030, 10, 27, 0, 30))}
        c.close()


def test_two_leaders_looking_at_once_make_one_run(follower: tuple[Hub, sa.Engine]) -> None:
    """The loops of two hubs that both believe they lead: the CronJob's row makes them take turns,
    and the second sees the run the first made."""
    hub, engine = follower  # its loops stand still: the test holds the leader lock
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
        c.apply_cron_job(cron("twice"))
        with engine.connect() as conn:
            conn.execute(sa.text("UPDATE cron_jobs SET created_at = :t"), {"t": T0})
            conn.commit()
        uid = c.get_cron_job("twice").uid
        go = threading.Barrier(4)

        def look() -> None:
            go.wait()
            with session_scope(hub.ctx.sessions) as session:
                look_at_cron(uid, now=utc(2030, 1, 1, 0, 5, 1), session=session)

        threads = [threading.Thread(target=look) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert set(jobs(c)) == {run("twice", utc(2030, 1, 1, 0, 5))}
        assert [r for r, _ in events(c, "twice")].count("SuccessfulCreate") == 1


def test_run_now_from_a_cronjob_and_delete_with_or_without_its_jobs(
    hub_clock: tuple[Hub, FakeClock], hub_client: Client, engine: sa.Engine
) -> None:
    hub, clock = hub_clock
    hub_client.apply_cron_job(cron("m"))
    made = hub_client.create_job_from_cron_job("m-by-hand", "m")
    assert made.name == "m-by-hand"
    wait(lambda: list(hub_client.get_cron_job("m").active) == ["m-by-hand"], what="the manual run counted")
    with pytest.raises(VGlobalError) as bad:
        hub_client.create_job_from_cron_job("Bad_Name", "m")
    assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT and "metadata.name" in bad.value.message
    tick(hub, clock, engine, utc(2030, 1, 1, 0, 5, 1), "m")
    assert hub_client.delete_cron_job("m").deleted_jobs == []
    assert set(jobs(hub_client)) == {"m-by-hand", run("m", utc(2030, 1, 1, 0, 5))}  # orphaned, kept
    assert hub_client.apply_cron_job(cron("k")).result == "created"
    assert hub_client.apply_cron_job(cron("k")).result == "unchanged"
    assert hub_client.apply_cron_job(cron("k", "*/10 * * * *")).result == "configured"
    assert hub_client.get_cron_job("k").schedule == "*/10 * * * *"
    hub_client.create_job_from_cron_job("k-by-hand", "k")
    assert list(hub_client.delete_cron_job("k", cascade=True).deleted_jobs) == ["k-by-hand"]
    assert "k-by-hand" not in jobs(hub_client)
    assert hub_client.list_cron_jobs() == []


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"timeZone": "Mars/Olympus"}, "spec.timeZone"),
        ({"schedule": "61 * * * *"}, "spec.schedule"),
        ({"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy"),
        ({"jobTemplate": {"spec": {"queue": "nope", "tasks": []}}}, "spec.jobTemplate.spec"),
    ],
)
def test_bad_cronjobs_are_refused_naming_the_field_and_store_nothing(
    client: Client, engine: sa.Engine, spec: dict[str, Any], field: str
) -> None:
    doc = json.loads(cron("bad"))
    doc["spec"].update(spec)
    with pytest.raises(VGlobalError) as err:
        client.apply_cron_job(json.dumps(doc))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in err.value.message
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM cron_jobs")).scalar_one() == 0


def test_a_template_naming_a_missing_queue_is_refused_with_its_path(
    client: Client, engine: sa.Engine
) -> None:
    doc = json.loads(cron("q"))
    doc["spec"]["jobTemplate"]["spec"]["queue"] = "nope"
    with pytest.raises(VGlobalError) as err:
        client.apply_cron_job(json.dumps(doc))
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    assert err.value.message.startswith('spec.jobTemplate.spec.queue: queue "nope" not found')
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM cron_jobs")).scalar_one() == 0
