"""An agent's messages in one AgentMessage.batch are checked and recorded each as if sent alone;
the hub says in Registered that it takes batches, and names a bad message's field in a batch. The
other way, what one sync delivers goes as one HubMessage.batch to an agent that says it takes
them, and one by one to an agent that does not."""

from __future__ import annotations

import grpc
import pytest

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from tests.integration.test_dispatch_and_fencing import JOB
from vglobal.api.v1 import agent_pb2
from vglobal.client import Client
from vglobal.hub.server import Hub


def test_a_runs_whole_life_in_one_batch(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        assert agent.connect().registered.takes_batches
        client.submit_job(JOB % "j1")
        d = agent.expect("dispatch").dispatch
        with agent.batched():
            agent.accept(d.job_uid, d.generation)
            agent.status(d.job_uid, d.generation, "Running")
            agent.status(d.job_uid, d.generation, "Completed")
        job = wait(lambda: (j := client.get_job("j1")).phase == "Completed" and j)
        assert job.binding_phase == "Succeeded"
    finally:
        agent.close()


@pytest.mark.parametrize(
    ("inner", "field"),
    [
        (agent_pb2.AgentMessage(status=agent_pb2.JobStatus(job_uid="u", generation=1, phase="Sleeping")),
         'batch.messages[1].status.phase: unknown job phase "Sleeping"'),
        (agent_pb2.AgentMessage(register=agent_pb2.Register(cluster="east")),
         "batch.messages[1].body: a register cannot be sent in a batch"),
    ],
)  # fmt: skip
def test_a_bad_message_in_a_batch_is_refused_by_its_field(
    hub: Hub, client: Client, inner: agent_pb2.AgentMessage, field: str
) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        agent.connect()
        ok = agent_pb2.AgentMessage(accepted=agent_pb2.BindingAccepted(job_uid="u", generation=1))
        agent.out.put(agent_pb2.AgentMessage(batch=agent_pb2.AgentBatch(messages=[ok, inner])))
        with pytest.raises(grpc.RpcError) as refused:
            agent.expect("nothing", timeout=30)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert field in (refused.value.details() or "")
    finally:
        agent.close()


def test_a_sync_delivers_in_one_batch_only_to_an_agent_that_takes_them(hub: Hub, client: Client) -> None:
    old = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=3)  # room for the three jobs
    try:
        old.connect()  # an agent of before HubMessage.batch
        for name in ("j1", "j2", "j3"):
            client.submit_job(JOB % name)
        uids = {old.expect("dispatch").dispatch.job_uid for _ in range(3)}
    finally:
        old.close()
    bodies = {m.WhichOneof("body") for m in old.history}
    assert "batch" not in bodies and {"registered", "dispatch"} <= bodies  # (and a queue's limits)

    # A new stream is sent every admitted binding of its cluster: the three, in one sync.
    new = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=3)
    try:
        new.connect(takes_batches=True)
        got = {new.expect("dispatch", timeout=30).dispatch.job_uid for _ in range(3)}
        assert got == uids
        batches = [m for m in new.history if m.WhichOneof("body") == "batch"]
        assert [[i.dispatch.job_uid for i in b.batch.messages] for b in batches] == [
            [d.dispatch.job_uid for d in batches[0].batch.messages]
        ]
        dispatched = [i for i in batches[0].batch.messages if i.WhichOneof("body") == "dispatch"]
        assert len(dispatched) == 3  # beside them, the queue's limits on this cluster
    finally:
        new.close()
