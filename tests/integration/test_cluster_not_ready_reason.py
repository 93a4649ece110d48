"""A job admitted to a cluster that goes NotReady says so at once (reason and event), long before
failover, and says so no more once the cluster's agent reports again."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from vglobal.api.v1 import agent_pb2
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


@pytest.fixture
def quick_hub(database_url: str) -> Iterator[Hub]:
    settings = HubSettings(
        listen="127.0.0.1:0",
        database_url=database_url,
        dispatch_interval=0.2,
        cluster_timeout=1.0,
        failover_after=600.0,  # never within the test: only NotReady is seen
    )
    h = Hub(settings)
    h.start()
    yield h
    h.shutdown()


def test_a_job_on_a_not_ready_cluster_says_so_until_the_cluster_is_back(quick_hub: Hub) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{quick_hub.port}", "east")
    beating = threading.Event()
    stop = threading.Event()

    def pump() -> None:  # heartbeats while ``beating`` is set, as a live agent sends them
        while not stop.wait(0.2):
            if beating.is_set():
                agent.send(heartbeat=agent_pb2.Heartbeat())

    pumper = threading.Thread(target=pump, daemon=True)
    with Client(f"127.0.0.1:{quick_hub.port}", timeout=10, retries=1) as client:
        try:
            agent.connect()
            beating.set()
            pumper.start()
            client.submit_job(JOB)
            d = agent.expect("dispatch").dispatch
            agent.status(d.job_uid, d.generation, "Running")
            wait(lambda: client.get_job("train").phase == "Running", 10, "train Running")
            assert client.get_job("train").reason_kind == ""

            beating.clear()  # the agent goes silent: NotReady after 1 s, failover only after 600 s
            wait(lambda: client.get_job("train").reason_kind == "ClusterNotReady", 15, "the job to say so")
            job = client.get_job("train")
            assert job.phase == "Running" and job.cluster == "east" and job.generation == d.generation
            assert job.reason.startswith("cluster east is NotReady: no heartbeat for 1s")
            events = [e for e in client.explain_job("train").events if e.reason == "ClusterNotReady"]
            assert len(events) == 1 and events[0].kind == "Warning" and "east" in events[0].message

            beating.set()  # back: the reason goes, the run is the same
            wait(lambda: client.get_job("train").reason_kind == "", 15, "the reason to go")
            job = client.get_job("train")
            assert (job.phase, job.cluster, job.generation, job.reason) == ("Running", "east", d.generation, "")
            assert client.get_cluster("east").state == "Ready"
        finally:
            stop.set()
            agent.close()
