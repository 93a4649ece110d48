"""A tenant through a real TLS hub with tokens: it creates and deletes sub-queues under the queue an
admin granted it, submits to them, and cannot reach beyond the grant or its parent's limits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.integration.secure_hub import USERS, SecureHub, make_certs, secure_settings
from vglobal.client import VGlobalError
from vglobal.hub.server import Hub


def queue(name: str, parent: str, spec: str = "") -> str:
    return f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {{parent: {parent}{", " + spec if spec else ""}}}
"""


def job(name: str, queue_name: str) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue_name}
  tasks:
  - {{name: t, replicas: 1, template: {{spec: {{containers: [{{name: c, image: x}}]}}}}}}
"""


@pytest.fixture
def tenants(tmp_path: Path, database_url: str) -> Iterator[SecureHub]:
    certs = make_certs(tmp_path / "certs", users=[*USERS, "tina:tenant:team-a*"])
    hub = Hub(secure_settings(certs, database_url))
    hub.start()
    yield SecureHub(hub, certs)
    hub.shutdown()


def denied(call: object) -> str:
    with pytest.raises(VGlobalError) as err:
        call()  # type: ignore[operator]
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED, err.value
    return err.value.message


def test_a_tenant_manages_sub_queues_only_under_its_grant_and_within_it(tenants: SecureHub) -> None:
    with tenants.client("ada") as admin:
        admin.apply_queue(
            queue("team-a", "root", "capability: {cpu: '8'}, guarantee: {resource: {cpu: '4'}}")
        )
        admin.apply_queue(queue("team-b", "root"))
    with tenants.client("tina") as tina:
        tina.apply_queue(
            queue("team-a-dev", "team-a", "capability: {cpu: '4'}, guarantee: {resource: {cpu: '3'}}")
        )
        assert tina.submit_job(job("train", "team-a-dev")).job.queue == "team-a-dev"
        # Not the granted queue itself, nor anything outside it.
        assert 'may not manage sub-queues in queue "root"' in denied(
            lambda: tina.apply_queue(queue("team-a", "root"))
        )
        assert 'in queue "team-b"' in denied(lambda: tina.apply_queue(queue("team-a-x", "team-b")))
        assert 'in queue "b-dev"' in denied(lambda: tina.apply_queue(queue("b-dev", "team-a")))
        denied(lambda: tina.delete_queue("team-b"))
        denied(lambda: tina.close_queue("team-a-dev"))  # opening and closing stays the operators'
        # Never beyond the parent: capability, and the children's guarantees together.
        with pytest.raises(VGlobalError) as err:
            tina.apply_queue(queue("team-a-big", "team-a", "capability: {cpu: '16'}"))
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert err.value.message == (
            'spec.capability.cpu: 16 is more than the 8 of parent queue "team-a"\'s capability'
        )
        with pytest.raises(VGlobalError) as err:
            tina.apply_queue(queue("team-a-ops", "team-a", "guarantee: {resource: {cpu: '2'}}"))
        assert err.value.message.startswith("spec.guarantee.resource.cpu: 5 is more than the 4 of")
        assert {q.name for q in tina.list_queues()} == {"team-a", "team-a-dev"}
        tina.delete_job("train")
        tina.delete_queue("team-a-dev")
    with tenants.client("ada") as admin:
        assert "team-a-dev" not in [q.name for q in admin.list_queues()]


def test_a_tenant_binding_names_its_queues(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="required for role tenant"):
        make_certs(tmp_path / "certs", users=["tina:tenant"])
