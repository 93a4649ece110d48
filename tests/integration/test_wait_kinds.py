"""Why a job waits comes with its kind, end to end: admission's kinds and the hub's own (a
rejection, a drain) are stored with the sentence and shown by GetJob and ExplainJob."""

from __future__ import annotations

import sqlalchemy as sa

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.test_dispatch_and_fencing import JOB, wait
from vglobal.api.v1 import agent_pb2
from vglobal.client import Client
from vglobal.hub.server import Hub
from vglobal.hub.servicers.jobs import NOT_EXPLAINED_YET
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo


def kinds(client: Client, name: str) -> tuple[str, str, str]:
    """(stored kind, explained kind, explained reason)."""
    explained = client.explain_job(name)
    return client.get_job(name).reason_kind, explained.reason_kind, explained.reason


def admit(engine: sa.Engine, uid: str, cluster: str) -> None:
    """What the leader's dispatcher would write."""
    with session_scope(make_sessionmaker(engine)) as session:
        assert bindings_repo.admit([(uid, cluster)], session=session)


def test_the_hub_s_own_reasons_carry_their_kind(follower: tuple[Hub, sa.Engine]) -> None:
    hub, engine = follower
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as client:
        try:
            agent.connect()
            uid = client.submit_job(JOB % "j1").job.uid
            assert kinds(client, "j1") == ("", "Unexamined", NOT_EXPLAINED_YET)
            admit(engine, uid, "east")
            d = agent.expect("dispatch").dispatch
            assert client.explain_job("j1").reason_kind == ""  # admitted: no wait
            agent.send(
                rejected=agent_pb2.BindingRejected(job_uid=uid, generation=d.generation, reason="no room")
            )
            wait(lambda: client.get_job("j1").binding_phase == "Suspended")
            assert kinds(client, "j1") == (
                "Rejected",
                "Rejected",
                "cluster east rejected the binding: no room",
            )
            admit(engine, uid, "east")
            assert agent.expect("dispatch").dispatch.generation == 2
            client.drain_cluster("east")
            assert kinds(client, "j1") == ("Drained", "Drained", "cluster east drained")
        finally:
            agent.close()


def test_admission_s_kind_is_stored_and_a_new_kind_replaces_it_at_once(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "small", nodes=4, gpus=2)  # no node has 4 GPUs
    try:
        agent.connect()
        client.submit_job(JOB % "big")
        wait(lambda: client.get_job("big").reason_kind == "NeverFits")
        assert "can never fit today" in client.explain_job("big").reason
        client.close_queue("default")
        wait(lambda: client.get_job("big").reason_kind == "QueueClosed")
        assert kinds(client, "big") == ("QueueClosed", "QueueClosed", "queue default is closed")
    finally:
        agent.close()
