"""Users through the real API of a TLS hub: tokens, roles and queue scopes on every call; lists show
only what the caller may read; who did what is recorded."""

from __future__ import annotations

import grpc
import pytest

from tests.integration.secure_hub import SecureHub
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.client import Client, VGlobalError


def queue(name: str) -> str:
    return f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{weight: 1}}\n"


def job(name: str, queue_name: str) -> str:
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue_name}
  tasks:
  - name: t
    replicas: 1
    template: {{spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}}}
"""


def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(VGlobalError) as err:
        call()  # type: ignore[operator]
    return err.value.code


@pytest.fixture
def teams(secure: SecureHub) -> SecureHub:
    with secure.client("olga") as ops:
        ops.apply_queue(queue("team-a"))
        ops.apply_queue(queue("team-b"))
    return secure


def test_plaintext_to_a_tls_hub_fails(secure: SecureHub) -> None:
    with grpc.insecure_channel(secure.target) as ch:
        stub = jobs_pb2_grpc.JobServiceStub(ch)
        with pytest.raises(grpc.RpcError) as err:
            stub.ListJobs(jobs_pb2.ListJobsRequest(), timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_no_token_or_a_wrong_token_is_unauthenticated(secure: SecureHub) -> None:
    with Client(dial=secure.dial(None), timeout=5, retries=1) as anonymous:
        assert code_of(anonymous.list_jobs) == grpc.StatusCode.UNAUTHENTICATED
    with Client(secure.target, ca_file=secure.certs / "ca.crt", token="guess", timeout=5, retries=1) as c:
        assert code_of(c.list_jobs) == grpc.StatusCode.UNAUTHENTICATED


def test_a_team_a_token_cannot_submit_to_team_b(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.submit_job(job("a1", "team-a"))
        with pytest.raises(VGlobalError) as err:
            alice.submit_job(job("b1", "team-b"))
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert "submitter on queues team-a*" in err.value.message and 'queue "team-b"' in err.value.message
    with teams.client("ada") as ada:
        assert [j.name for j in ada.list_jobs()] == ["a1"]  # nothing of the refused one was stored


def test_a_viewer_cannot_cancel_and_a_submitter_cannot_touch_queues(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.submit_job(job("a1", "team-a"))
        assert code_of(lambda: alice.apply_queue(queue("team-a"))) == grpc.StatusCode.PERMISSION_DENIED
        assert code_of(lambda: alice.close_queue("team-a")) == grpc.StatusCode.PERMISSION_DENIED
    with teams.client("vic") as vic:
        with pytest.raises(VGlobalError) as err:
            vic.cancel_job("a1")
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED and "viewer" in err.value.message
        assert code_of(lambda: vic.cordon_cluster("gpu-east")) == grpc.StatusCode.PERMISSION_DENIED
        assert vic.get_job("a1").phase == "Pending"
    with teams.client("bob") as bob:  # another team's submitter may not cancel it either
        assert code_of(lambda: bob.cancel_job("a1")) == grpc.StatusCode.PERMISSION_DENIED
        assert code_of(lambda: bob.delete_job("a1")) == grpc.StatusCode.PERMISSION_DENIED
    with teams.client("ada") as ada:
        assert ada.get_job("a1").phase == "Pending"


def test_lists_show_only_what_the_caller_may_read(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.submit_job(job("a1", "team-a"))
    with teams.client("bob") as bob:
        bob.submit_job(job("b1", "team-b"))
        assert [j.name for j in bob.list_jobs()] == ["b1"]
        assert [q.name for q in bob.list_queues()] == ["team-b"]
        assert code_of(lambda: bob.get_job("a1")) == grpc.StatusCode.PERMISSION_DENIED
    with teams.client("vera") as vera:  # a viewer limited to team-a*
        assert [j.name for j in vera.list_jobs()] == ["a1"]
        assert [j.name for j in vera.list_jobs(queue="team-b")] == []
    with teams.client("vic") as vic:
        assert sorted(j.name for j in vic.list_jobs()) == ["a1", "b1"]
        assert sorted(q.name for q in vic.list_queues()) == ["default", "team-a", "team-b"]


def test_an_operator_manages_queues_and_clusters_but_submits_nothing(teams: SecureHub) -> None:
    with teams.client("olga") as olga:
        olga.close_queue("team-b")
        olga.open_queue("team-b")
        assert code_of(lambda: olga.submit_job(job("o1", "team-a"))) == grpc.StatusCode.PERMISSION_DENIED


def test_an_agent_token_is_no_user(secure: SecureHub) -> None:
    with secure.client("east-token") as agent:
        assert code_of(agent.list_jobs) == grpc.StatusCode.PERMISSION_DENIED


def test_describe_shows_who_submitted_cancelled_and_deleted(teams: SecureHub) -> None:
    with teams.client("alice") as alice:
        alice.submit_job(job("a1", "team-a"))
    with teams.client("ada") as ada:
        ada.cancel_job("a1")
        events = {e.reason: e.principal for e in ada.explain_job("a1").events}
        assert events["Submitted"] == "alice" and events["Cancelled"] == "ada"
        ada.delete_job("a1")
        with pytest.raises(VGlobalError) as err:
            ada.explain_job("a1")
        assert err.value.code == grpc.StatusCode.NOT_FOUND and "deleted by ada" in err.value.message


def test_only_an_admin_deletes_a_cluster(secure: SecureHub) -> None:
    # The role is checked before the cluster is looked up: an operator, who may cordon and drain,
    # is denied; an admin gets as far as the (absent) cluster.
    with secure.client("olga") as olga:
        assert code_of(lambda: olga.delete_cluster("east", force=True)) == grpc.StatusCode.PERMISSION_DENIED
        assert code_of(lambda: olga.drain_cluster("east")) == grpc.StatusCode.NOT_FOUND
    with secure.client("vic") as vic:
        assert code_of(lambda: vic.delete_cluster("east")) == grpc.StatusCode.PERMISSION_DENIED
    with secure.client("ada") as ada:
        assert code_of(lambda: ada.delete_cluster("east")) == grpc.StatusCode.NOT_FOUND
