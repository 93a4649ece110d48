"""CronJobs, JobFlows and watches on a TLS hub with tokens and roles: they act as the Jobs they make,
so the queue those Jobs go to decides who may create, change, delete or read them; lists and watches
keep to the queues the caller may read; who did what is recorded."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

import grpc
import pytest

from tests.integration import test_auth_api
from tests.integration.polling import wait
from tests.integration.secure_hub import SecureHub
from tests.integration.test_auth_api import code_of, job
from vglobal.api.v1 import jobs_pb2
from vglobal.client import Client, JobWatch, VGlobalError

DENIED = grpc.StatusCode.PERMISSION_DENIED
teams = test_auth_api.teams  # the fixture: a TLS hub with queues team-a and team-b
TASK = {
    "name": "t",
    "replicas": 1,
    "template": {
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}
    },
}


def cron(name: str, queue_name: str) -> str:
    spec = {"schedule": "@hourly", "jobTemplate": {"spec": {"queue": queue_name, "tasks": [TASK]}}}
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "CronJob",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def template(name: str, queue_name: str) -> str:
    return json.dumps(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": name},
            "spec": {"queue": queue_name, "tasks": [TASK]},
        }
    )


def flow(name: str, *steps: str) -> str:
    return json.dumps(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": name},
            "spec": {"flows": [{"name": s} for s in steps]},
        }
    )


def test_a_team_a_submitter_cannot_make_a_cronjob_for_team_b(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        assert alice.apply_cron_job(cron("nightly", "team-a")).result == "created"
        with pytest.raises(VGlobalError) as err:
            alice.apply_cron_job(cron("other", "team-b"))
        assert err.value.code == DENIED and 'queue "team-b"' in err.value.message
        # Nor take over a CronJob of team-b by applying one of the same name into team-a.
    with teams.client("bob") as bob:
        bob.apply_cron_job(cron("bobs", "team-b"))
    with teams.client("alice") as alice:
        assert code_of(lambda: alice.apply_cron_job(cron("bobs", "team-a"))) == DENIED
        assert code_of(lambda: alice.suspend_cron_job("bobs")) == DENIED
        assert code_of(lambda: alice.create_job_from_cron_job("now", "bobs")) == DENIED
        assert code_of(lambda: alice.delete_cron_job("bobs")) == DENIED
        assert code_of(lambda: alice.get_cron_job("bobs")) == DENIED
        assert [c.name for c in alice.list_cron_jobs()] == ["nightly"]
    with teams.client("ada") as ada:
        assert sorted(c.name for c in ada.list_cron_jobs()) == ["bobs", "nightly"]
        assert ada.get_cron_job("bobs").suspend is False
        assert [j.name for j in ada.list_jobs()] == []  # no run was made by the refused calls


def test_a_viewer_reads_cronjobs_but_cannot_create_suspend_or_delete_them(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.apply_cron_job(cron("nightly", "team-a"))
    with teams.client("vic") as vic:
        assert code_of(lambda: vic.apply_cron_job(cron("mine", "team-a"))) == DENIED
        assert code_of(lambda: vic.suspend_cron_job("nightly")) == DENIED
        assert code_of(lambda: vic.resume_cron_job("nightly")) == DENIED
        assert code_of(lambda: vic.create_job_from_cron_job("now", "nightly")) == DENIED
        assert code_of(lambda: vic.delete_cron_job("nightly", cascade=True)) == DENIED
        assert [c.name for c in vic.list_cron_jobs()] == ["nightly"]
        assert vic.get_cron_job("nightly").suspend is False
    with teams.client("vera") as vera:  # a viewer of team-a* only
        assert [c.name for c in vera.list_cron_jobs()] == ["nightly"]
    with teams.client("bob") as bob:
        assert bob.list_cron_jobs() == []


def test_cronjob_calls_are_audited_with_who_made_them(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.apply_cron_job(cron("nightly", "team-a"))
        alice.suspend_cron_job("nightly")
        alice.resume_cron_job("nightly")
        made = alice.create_job_from_cron_job("by-hand", "nightly")
        events = [(e.reason, e.principal) for e in alice.get_cron_job("nightly").events]
        assert events == [
            ("Applied", "alice"),
            ("Suspended", "alice"),
            ("Resumed", "alice"),
            ("SuccessfulCreate", "alice"),
        ]
        submitted = {e.reason: e.principal for e in alice.explain_job(made.name).events}
        assert submitted["Submitted"] == "alice"
    with teams.client("ada") as ada:
        assert list(ada.delete_cron_job("nightly", cascade=True).deleted_jobs) == ["by-hand"]
        with pytest.raises(VGlobalError) as err:
            ada.get_cron_job("nightly")
        assert err.value.code == grpc.StatusCode.NOT_FOUND and "deleted by ada" in err.value.message
        with pytest.raises(VGlobalError) as gone:
            ada.get_job("by-hand")
        assert "deleted by ada" in gone.value.message


def test_jobflows_need_the_right_to_submit_in_every_queue_their_templates_use(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.apply_job_template(template("prep", "team-a"))
        assert code_of(lambda: alice.apply_job_template(template("train", "team-b"))) == DENIED
    with teams.client("bob") as bob:
        bob.apply_job_template(template("train", "team-b"))
        assert code_of(lambda: bob.apply_job_template(template("prep", "team-b"))) == DENIED  # alice's
        assert code_of(lambda: bob.delete_job_template("prep")) == DENIED
        assert [t.name for t in bob.list_job_templates()] == ["train"]
    with teams.client("alice") as alice:
        # One step in team-b is enough to refuse the whole flow.
        assert code_of(lambda: alice.apply_job_flow(flow("both", "prep", "train"))) == DENIED
        assert alice.apply_job_flow(flow("mine", "prep")).result == "created"
        assert alice.list_job_flows()[0].name == "mine"
    with teams.client("ada") as ada:
        ada.apply_job_flow(flow("both", "prep", "train"))
        assert {f.name for f in ada.list_job_flows()} == {"mine", "both"}
    with teams.client("vera") as vera:  # reads team-a* only: "both" also runs in team-b
        assert [f.name for f in vera.list_job_flows()] == ["mine"]
        assert code_of(lambda: vera.get_job_flow("both")) == DENIED
        assert code_of(lambda: vera.delete_job_flow("mine")) == DENIED
    with teams.client("vic") as vic:
        assert code_of(lambda: vic.apply_job_flow(flow("v", "prep"))) == DENIED
        assert code_of(lambda: vic.delete_job_flow("mine")) == DENIED
    with teams.client("alice") as alice:
        assert code_of(lambda: alice.delete_job_flow("both")) == DENIED
        assert alice.get_job_flow("mine").events[0].principal == "alice"
        alice.delete_job_flow("mine")
        with pytest.raises(VGlobalError) as err:
            alice.get_job_flow("mine")
        assert "deleted by alice" in err.value.message


def watched(client: Client, out: list[jobs_pb2.JobEvent], **kw: Any) -> JobWatch:
    """Read a watch into ``out`` on a thread until it is closed."""
    events = client.watch_jobs(**kw)

    def read() -> None:
        with contextlib.suppress(VGlobalError):
            out.extend(events)

    threading.Thread(target=read, daemon=True).start()
    return events


def test_a_watch_shows_only_the_queues_the_caller_may_read(teams: SecureHub) -> None:
    with (
        teams.client("ada") as ada,
        teams.client("vera") as vera,
        teams.client("bob") as bob,
        teams.client("alice") as alice,
    ):
        _, start = ada.list_jobs_at()
        seen: dict[str, list[jobs_pb2.JobEvent]] = {"ada": [], "vera": [], "bob": []}
        watches = [
            watched(c, seen[n], from_revision=start) for n, c in (("ada", ada), ("vera", vera), ("bob", bob))
        ]
        alice.submit_job(job("a1", "team-a"))
        bob.submit_job(job("b1", "team-b"))
        alice.submit_job(job("a2", "team-a"))
        wait(lambda: {"a2"} <= {e.job.name for e in seen["ada"]}, what="ada sees everything")
        wait(lambda: {"a2"} <= {e.job.name for e in seen["vera"]}, what="vera sees team-a")
        wait(lambda: {"b1"} <= {e.job.name for e in seen["bob"]}, what="bob sees team-b")
        names = {k: {e.job.name for e in v if e.type == jobs_pb2.JobEvent.ADDED} for k, v in seen.items()}
        assert names["ada"] == {"a1", "b1", "a2"}
        assert names["vera"] == {"a1", "a2"}
        # bob had b1 after a1: had a1 been let through, it would have come first.
        assert names["bob"] == {"b1"}
        with pytest.raises(VGlobalError) as err:
            next(bob.watch_jobs(queue="team-a"))
        assert err.value.code == DENIED
        for w in watches:
            w.close()
