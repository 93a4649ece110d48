"""Agents are who their certificate (or agent token) says: they register and report only as that
cluster; one live stream per cluster; a stream must begin with Register, within 5 s."""

from __future__ import annotations

import time

import grpc
import pytest

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from tests.integration.secure_hub import SecureHub
from vglobal.api.v1 import agent_pb2, agent_pb2_grpc


def refused(agent: ScriptedAgent) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        agent.connect()
    return err.value


def node_names(secure: SecureHub, cluster: str) -> list[str]:
    with secure.client("ada") as ada:
        return [n.name for n in ada.get_cluster(cluster).node_list]


def test_a_certificate_for_cluster_a_cannot_register_as_b(secure: SecureHub) -> None:
    rogue = ScriptedAgent(secure.agent_target, "gpu-west", channel=secure.agent_dial("gpu-east").channel())
    err = refused(rogue)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert 'may not connect as the agent of cluster "gpu-west"' in (err.details() or "")
    with secure.client("ada") as ada:
        assert ada.list_clusters() == []


def test_no_credentials_cannot_register_a_cluster(secure: SecureHub) -> None:
    anonymous = ScriptedAgent(secure.target, "rogue-1", channel=secure.dial(None).channel())
    assert refused(anonymous).code() == grpc.StatusCode.UNAUTHENTICATED
    user = ScriptedAgent(secure.target, "rogue-1", channel=secure.dial("ada").channel())
    assert refused(user).code() == grpc.StatusCode.PERMISSION_DENIED  # an admin is no agent
    with secure.client("ada") as ada:
        assert ada.list_clusters() == []


def test_an_agent_token_registers_only_its_cluster(secure: SecureHub) -> None:
    west = ScriptedAgent(secure.target, "gpu-west", channel=secure.dial("east-token").channel())
    assert refused(west).code() == grpc.StatusCode.PERMISSION_DENIED
    east = ScriptedAgent(secure.target, "gpu-east", channel=secure.dial("east-token").channel())
    east.connect()
    assert node_names(secure, "gpu-east") == ["gpu-east-0"]
    east.close()


def test_a_second_stream_for_a_live_cluster_is_refused(secure: SecureHub) -> None:
    real = ScriptedAgent(
        secure.agent_target, "gpu-east", nodes=4, channel=secure.agent_dial("gpu-east").channel()
    )
    real.connect()
    # The same cluster by another identity (its agent token) while the real stream is live.
    other = ScriptedAgent(secure.target, "gpu-east", nodes=1, channel=secure.dial("east-token").channel())
    other.nodes[0].name = "fake-node"
    err = refused(other)
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS
    assert node_names(secure, "gpu-east") == [f"gpu-east-{i}" for i in range(4)]
    real.close()


def test_the_same_identity_takes_over_after_missed_heartbeats(secure: SecureHub) -> None:
    first = ScriptedAgent(
        secure.agent_target, "gpu-east", nodes=2, channel=secure.agent_dial("gpu-east").channel()
    )
    before_first = time.monotonic()  # the hub heard from the first after this
    first.connect()
    second = ScriptedAgent(
        secure.agent_target, "gpu-east", nodes=3, channel=secure.agent_dial("gpu-east").channel()
    )
    assert refused(second).code() == grpc.StatusCode.ALREADY_EXISTS  # the first is still heartbeating

    # The first goes silent without closing its stream (a hung process, a dead network path):
    # the same identity is refused until three heartbeats are missed, then let in.
    def took_over() -> ScriptedAgent | None:
        agent = ScriptedAgent(
            secure.agent_target, "gpu-east", nodes=3, channel=secure.agent_dial("gpu-east").channel()
        )
        try:
            agent.connect()
            return agent
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.ALREADY_EXISTS, exc
            agent.close()
            return None

    third = wait(took_over, 60, "the same identity to take over the silent stream")
    assert time.monotonic() - before_first >= 3 * secure.hub.settings.heartbeat_interval
    assert node_names(secure, "gpu-east") == [f"gpu-east-{i}" for i in range(3)]
    # The old stream's inventory no longer counts: its register-like reports change nothing.
    first.send(heartbeat=agent_pb2.Heartbeat())
    wait(first.ended, 10, "the superseded stream to be closed")
    assert node_names(secure, "gpu-east") == [f"gpu-east-{i}" for i in range(3)]
    third.close()
    first.close()


def test_a_first_message_other_than_register_is_refused_at_once(secure: SecureHub) -> None:
    with secure.agent_dial("gpu-east").channel() as ch:
        stub = agent_pb2_grpc.AgentServiceStub(ch)
        with pytest.raises(grpc.RpcError) as err:
            list(stub.Connect(iter([agent_pb2.AgentMessage(heartbeat=agent_pb2.Heartbeat())]), timeout=20))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        # Refused for what it sent, not by the register timeout that ends a silent stream.
        assert "the first message must be Register" in (err.value.details() or "")


def test_a_stream_without_register_is_closed_after_5s(secure: SecureHub) -> None:
    with secure.agent_dial("gpu-east").channel() as ch:
        stub = agent_pb2_grpc.AgentServiceStub(ch)
        started = time.monotonic()

        def silent() -> object:
            time.sleep(30)
            yield agent_pb2.AgentMessage()

        with pytest.raises(grpc.RpcError) as err:
            list(stub.Connect(silent(), timeout=20))
        took = time.monotonic() - started
    # Closed by the hub (not by the call's 20 s deadline), and not before its 5 s.
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION, err.value
    assert "no Register within 5s" in (err.value.details() or "") and took >= 5
