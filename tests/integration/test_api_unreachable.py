"""An agent that is alive but cannot reach its cluster's API server says so in its heartbeats; the
hub then treats the cluster as it treats a silent one: NotReady after the cluster timeout."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from vglobal.api.v1 import agent_pb2
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub


@pytest.fixture
def quick_hub(database_url: str) -> Iterator[Hub]:
    settings = HubSettings(
        listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.2, cluster_timeout=1.5
    )
    h = Hub(settings)
    h.start()
    yield h
    h.shutdown()


def _state(client: Client, name: str) -> str:
    return str(client.get_cluster(name).state)


def test_api_unreachable_heartbeats_let_the_cluster_go_not_ready(quick_hub: Hub) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{quick_hub.port}", "east")
    with Client(f"127.0.0.1:{quick_hub.port}", timeout=10, retries=1) as client:
        try:
            agent.connect()
            unreachable = agent_pb2.Heartbeat(api_unreachable=True, api_error="dial tcp: connection refused")
            deadline = time.monotonic() + 10
            while _state(client, "east") == "Ready" and time.monotonic() < deadline:
                agent.send(heartbeat=unreachable)  # the stream is alive all along
                time.sleep(0.3)
            assert _state(client, "east") == "NotReady"
            agent.send(heartbeat=agent_pb2.Heartbeat())
            wait(lambda: _state(client, "east") == "Ready", 10, "Ready again after a normal heartbeat")
        finally:
            agent.close()
