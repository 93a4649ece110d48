"""Prometheus metrics on --metrics-listen, fed by the dispatcher."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.integration.agent_driver import ScriptedAgent
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: m1}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "2"}}}]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def metrics_hub(database_url: str) -> Iterator[tuple[Hub, int]]:
    port = free_port()
    h = Hub(
        HubSettings(
            listen="127.0.0.1:0",
            database_url=database_url,
            metrics_listen=f"127.0.0.1:{port}",
            dispatch_interval=0.2,
        )
    )
    h.start()
    yield h, port
    h.shutdown()


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


ADMITTED = 'vglobal_admissions_total{cluster="east",queue="default"}'


def value(text: str, series: str) -> float:
    """A sample's value; metrics are process-wide, so earlier tests may have counted too."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def test_metrics_show_admissions_queues_and_clusters(metrics_hub: tuple[Hub, int]) -> None:
    hub, port = metrics_hub
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    before = value(scrape(port), ADMITTED)
    try:
        agent.connect()
        with Client(f"127.0.0.1:{hub.port}") as client:
            client.submit_job(JOB)
            agent.expect("dispatch")
        deadline = time.monotonic() + 10
        text = ""
        while time.monotonic() < deadline:
            text = scrape(port)
            if value(text, ADMITTED) == before + 1:
                break
            time.sleep(0.2)
        assert value(text, ADMITTED) == before + 1
        assert 'vglobal_queue_allocated{queue="default",resource="nvidia.com/gpu"} 2000.0' in text
        assert 'vglobal_queue_deserved{queue="default",resource="nvidia.com/gpu"}' in text
        assert 'vglobal_cluster_ready{cluster="east"} 1.0' in text
        assert 'vglobal_cluster_free{cluster="east",resource="nvidia.com/gpu"}' in text
        assert "vglobal_dispatch_cycle_seconds_bucket" in text
        assert "vglobal_pending_bindings 0.0" in text
        assert "vglobal_leader 1.0" in text
    finally:
        agent.close()
