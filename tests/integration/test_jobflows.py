"""JobFlows in a real hub on a real Postgres: a diamond a -> (b, c) -> d runs in order, a failing
step fails the flow and starts nothing after it, retain/delete, and bad flows refused at apply time.
The steps' Jobs run on a scripted cluster that finishes each as the test says."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
import sqlalchemy as sa

from tests.integration.polling import wait
from tests.integration.workflow_driver import Cluster
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub


def template(name: str, queue: str = "default") -> str:
    return json.dumps(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": name},
            "spec": {
                "queue": queue,
                "tasks": [
                    {
                        "name": "work",
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                                ]
                            }
                        },
                    }
                ],
            },
        }
    )


def flow(name: str, flows: list[dict[str, Any]], retain: str = "retain") -> str:
    return json.dumps(
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": name},
            "spec": {"jobRetainPolicy": retain, "flows": flows},
        }
    )


DIAMOND = [
    {"name": "a"},
    {"name": "b", "dependsOn": {"targets": ["a"]}},
    {"name": "c", "dependsOn": {"targets": ["a"]}},
    {"name": "d", "dependsOn": {"targets": ["b", "c"]}},
]


def steps(client: Client, name: str) -> dict[str, str]:
    return {s.name: s.phase for s in client.get_job_flow(name).steps}


def job_names(client: Client) -> set[str]:
    return {j.name for j in client.list_jobs()}


def apply_diamond(client: Client, name: str, retain: str = "retain") -> None:
    for t in "abcd":
        client.apply_job_template(template(t))
    assert client.apply_job_flow(flow(name, DIAMOND, retain)).result == "created"


def test_a_diamond_runs_in_order_and_deletes_its_jobs_when_asked(hub: Hub, client: Client) -> None:
    apply_diamond(client, "dia", retain="delete")
    with Cluster(hub) as east:
        wait(lambda: job_names(client) == {"dia-a"}, what="only the first step made")
        assert client.get_job_flow("dia").phase in ("Pending", "Running")
        east.finish("dia-a")
        wait(lambda: job_names(client) == {"dia-a", "dia-b", "dia-c"}, what="both middle steps made")
        east.finish("dia-b")
        wait(lambda: steps(client, "dia")["b"] == "Completed", what="b completed")
        assert "dia-d" not in job_names(client)  # c still runs
        east.finish("dia-c")
        wait(lambda: "dia-d" in job_names(client), what="the last step made")
        east.finish("dia-d")
        # Succeed, then jobRetainPolicy delete removes the Jobs; the status keeps what they did.
        wait(lambda: client.get_job_flow("dia").phase == "Succeed", what="the flow succeeded")
        wait(lambda: job_names(client) == set(), what="the flow's jobs deleted")
        done = client.get_job_flow("dia")
        assert {s.name: s.phase for s in done.steps} == dict.fromkeys("abcd", "Completed")
        times = {s.name: (s.created_at.ToDatetime(), s.finished_at.ToDatetime()) for s in done.steps}
        assert times["a"][1] <= min(times["b"][0], times["c"][0])
        assert max(times["b"][1], times["c"][1]) <= times["d"][0]
        reasons = [e.reason for e in done.events]
        assert reasons.count("Created") == 4 and reasons.count("Deleted") == 4 and "Succeed" in reasons


def test_a_failing_step_fails_the_flow_and_nothing_after_it_starts(hub: Hub, client: Client) -> None:
    apply_diamond(client, "bad")
    with Cluster(hub) as east:
        east.finish("bad-a")
        east.dispatched("bad-b")
        east.dispatched("bad-c")
        east.finish("bad-b", "Failed")
        wait(lambda: client.get_job_flow("bad").phase == "Failed", what="the flow failed")
        east.finish("bad-c")  # c was running already: it may finish, d must still never start
        wait(lambda: client.get_job("bad-c").phase == "Completed", what="c completed")
        wait(lambda: steps(client, "bad")["c"] == "Completed", what="the flow saw c complete")
        assert steps(client, "bad") == {"a": "Completed", "b": "Failed", "c": "Completed", "d": "Skipped"}
        assert job_names(client) == {"bad-a", "bad-b", "bad-c"}  # retain: the jobs stay


def test_deleting_a_flow_deletes_its_jobs(hub: Hub, client: Client) -> None:
    apply_diamond(client, "gone")
    wait(lambda: "gone-a" in job_names(client), what="the first step made")
    client.apply_job_template(template("solo"))
    client.apply_job_flow(flow("other", [{"name": "solo"}]))
    wait(lambda: "other-solo" in job_names(client), what="the other flow's job")
    assert list(client.delete_job_flow("gone").deleted_jobs) == ["gone-a"]
    assert job_names(client) == {"other-solo"}
    assert [f.name for f in client.list_job_flows()] == ["other"]


def test_reapplying_the_same_flow_changes_nothing_and_a_started_flows_spec_is_immutable(
    hub: Hub, client: Client
) -> None:
    apply_diamond(client, "same")
    assert client.apply_job_flow(flow("same", DIAMOND)).result == "unchanged"
    wait(lambda: "same-a" in job_names(client), what="the first step made")
    with pytest.raises(VGlobalError) as err:
        client.apply_job_flow(flow("same", DIAMOND[:1]))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.message.startswith("spec.flows[1]")
    assert err.value.message.endswith(": field is immutable once the flow made its jobs")
    # Its labels still change (kubectl apply: configured).
    labelled = json.loads(flow("same", DIAMOND))
    labelled["metadata"]["labels"] = {"team": "a"}
    got = client.apply_job_flow(json.dumps(labelled))
    assert got.result == "configured" and '"team": "a"' in got.job_flow.manifest


@pytest.mark.parametrize(
    ("flows", "code", "field"),
    [
        (
            [{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}],
            grpc.StatusCode.INVALID_ARGUMENT,
            "spec.flows[1].dependsOn.targets: dependency cycle: a -> b -> a",
        ),
        (
            [{"name": "missing"}],
            grpc.StatusCode.INVALID_ARGUMENT,
            'spec.flows[0].name: JobTemplate "missing"',
        ),
        (
            [{"name": "a", "dependsOn": {"targets": ["x"]}}],
            grpc.StatusCode.INVALID_ARGUMENT,
            'spec.flows[0].dependsOn.targets[0]: unknown flow "x"',
        ),
        (
            [{"name": "elsewhere"}],
            grpc.StatusCode.NOT_FOUND,
            'spec.flows[0].name: JobTemplate "elsewhere": spec.queue',
        ),
    ],
)
def test_bad_flows_are_refused_at_apply_naming_the_field_and_store_nothing(
    client: Client, engine: sa.Engine, flows: list[dict[str, Any]], code: grpc.StatusCode, field: str
) -> None:
    client.apply_job_template(template("a"))
    client.apply_job_template(template("b"))
    client.apply_job_template(template("elsewhere", queue="no-such-queue"))
    with pytest.raises(VGlobalError) as err:
        client.apply_job_flow(flow("f", flows))
    assert err.value.code == code
    assert field in err.value.message, err.value.message
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM job_flows")).scalar_one() == 0
        assert conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one() == 0
