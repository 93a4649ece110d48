"""Prometheus metrics on --metrics-listen, fed by the dispatcher."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.integration.agent_driver import ScriptedAgent
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub
from vglobal.store.engine import make_engine
from vglobal.store.locks import AdvisoryLock, release_session_lock, try_session_lock

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
        assert 'vglobal_queue_allocated{queue="default",resource="nvidia.com/gpu"} 2.0' in text  # whole GPUs
        assert 'vglobal_queue_deserved{queue="default",resource="nvidia.com/gpu"}' in text
        assert 'vglobal_cluster_ready{cluster="east"} 1.0' in text
        assert 'vglobal_cluster_free{cluster="east",resource="nvidia.com/gpu"}' in text
        assert "vglobal_dispatch_cycle_seconds_bucket" in text
        assert "vglobal_pending_bindings 0.0" in text
        assert "vglobal_leader 1.0" in text
    finally:
        agent.close()


QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: training}
spec: {weight: 1}
"""

CYCLES = "vglobal_dispatch_cycle_seconds_count"


def series(text: str) -> dict[str, float]:
    """Every sample of a scrape, by its name and labels."""
    return {
        line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def after_cycles(port: int, n: int) -> dict[str, float]:
    """A scrape taken once ``n`` more dispatch cycles have ended since this call."""
    start = value(scrape(port), CYCLES)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        got = series(scrape(port))
        if got.get(CYCLES, 0) >= start + n:
            return got
        time.sleep(0.1)
    raise AssertionError(f"no {n} dispatch cycles within 20 s")


def test_no_series_keeps_the_last_values_of_an_emptied_queue_or_a_deleted_cluster(
    metrics_hub: tuple[Hub, int],
) -> None:
    hub, port = metrics_hub
    east = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    west = ScriptedAgent(f"127.0.0.1:{hub.port}", "west", gpus=1)  # too small: the job goes east
    try:
        east.connect()
        west.connect()
        with Client(f"127.0.0.1:{hub.port}") as client:
            client.apply_queue(QUEUE)
            client.submit_job(JOB.replace("spec:\n", "spec:\n  queue: training\n", 1))
            east.expect("dispatch")
            held = 'vglobal_queue_allocated{queue="training",resource="nvidia.com/gpu"}'
            before = after_cycles(port, 2)
            assert before.get(held, 0) > 0
            assert before.get('vglobal_cluster_free{cluster="east",resource="nvidia.com/gpu"}', 0) > 0
            assert before.get(held.replace("vglobal_queue_allocated{queue", "volcano_queue_allocated_scalar_resources{queue_name")) == 2

            client.delete_job("m1")  # the queue empties
            emptied = after_cycles(port, 2)
            held_now = ("vglobal_queue_allocated", "vglobal_queue_running_resources",
                        "vglobal_queue_reserved_resources", "volcano_queue_allocated", "volcano_queue_request")
            stale = {k: v for k, v in emptied.items() if "training" in k and k.startswith(held_now) and v}
            assert not stale, stale

            client.delete_queue("training")
            east.close()
            client.delete_cluster("east")
            gone = after_cycles(port, 2)
    finally:
        east.close()
        west.close()
    left = [
        k for k in gone
        if ('queue="training"' in k or 'queue_name="training"' in k or 'cluster="east"' in k)
        and not k.startswith(("vglobal_admissions_total", "vglobal_admissions_created"))
    ]  # fmt: skip
    assert not left, left
    # What still exists still reports.
    assert gone['vglobal_cluster_ready{cluster="west"}'] == 1
    assert gone['vglobal_queue_pending_jobs{queue="default"}'] == 0
    assert gone['vglobal_cluster_capacity{cluster="west",resource="nvidia.com/gpu"}'] == 1
    assert gone['vglobal_cluster_allocatable{cluster="west",resource="nvidia.com/gpu"}'] == 1
    assert gone['vglobal_cluster_free{cluster="west",resource="cpu"}'] == 64  # cores


def test_a_replica_that_stops_leading_stops_reporting_the_cycle_figures(
    metrics_hub: tuple[Hub, int], database_url: str
) -> None:
    hub, port = metrics_hub
    east = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    engine = make_engine(database_url, pool_size=1)
    try:
        east.connect()
        ready = 'vglobal_cluster_ready{cluster="east"}'
        assert after_cycles(port, 2)[ready] == 1
        with engine.connect() as peer:
            # Another replica takes the lock while Postgres drops this hub's session.
            deadline = time.monotonic() + 20
            while not try_session_lock(peer, AdvisoryLock.HUB_LEADER):
                assert time.monotonic() < deadline, "the peer never got the leader lock"
                peer.execute(
                    sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                        "AND granted AND pid <> pg_backend_pid() AND database = "
                        "(SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                )
                peer.commit()
            peer.commit()
            deadline = time.monotonic() + 20
            while value(text := scrape(port), "vglobal_leader") != 0 or ready in text:
                assert time.monotonic() < deadline, "the former leader still reports the cycle's figures"
                time.sleep(0.1)
            assert "vglobal_queue_" not in "".join(
                line for line in text.splitlines() if not line.startswith("#")
            )  # fmt: skip
            release_session_lock(peer, AdvisoryLock.HUB_LEADER)
            peer.commit()
    finally:
        east.close()
        engine.dispose()
