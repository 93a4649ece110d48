"""The hub's side of a job's path: admission, delivery, acks, status, failover fencing."""

from __future__ import annotations

import json

import sqlalchemy as sa

from tests.integration.agent_driver import ScriptedAgent, units
from tests.integration.polling import wait
from vglobal.api.v1 import agent_pb2
from vglobal.client import Client
from vglobal.hub.server import Hub

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %s}
spec:
  tasks:
  - name: t
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "4"}}}]
"""


def test_dispatch_ack_status_finish(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        agent.connect()
        client.submit_job(JOB % "j1")
        d = agent.expect("dispatch").dispatch
        assert d.generation == 1 and json.loads(d.manifest)["metadata"]["name"] == "j1"
        assert client.get_job("j1").binding_phase == "Dispatched"
        agent.accept(d.job_uid, 1)
        wait(lambda: client.get_job("j1").binding_phase == "Bound")
        agent.status(d.job_uid, 1, "Running", pods=2)
        wait(lambda: client.get_job("j1").binding_phase == "Running")
        q = client.get_queue("default")
        assert dict(q.allocated.quantities)["nvidia.com/gpu"] == "8"
        agent.status(d.job_uid, 1, "Completed")
        job = wait(lambda: (j := client.get_job("j1")).phase == "Completed" and j)
        assert job.binding_phase == "Succeeded"
        assert dict(client.get_queue("default").allocated.quantities) == {}
    finally:
        agent.close()


def test_stale_generation_is_ignored_and_cancelled(hub: Hub, client: Client, engine: sa.Engine) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        agent.connect()
        client.submit_job(JOB % "j1")
        d = agent.expect("dispatch").dispatch
        agent.accept(d.job_uid, d.generation)
        agent.status(d.job_uid, d.generation, "Running")
        wait(lambda: client.get_job("j1").binding_phase == "Running")
        # Drain moves the job off this cluster: its binding is Suspended again and this run is fenced.
        client.drain_cluster("east")
        cancel = agent.expect("cancel").cancel
        assert (cancel.job_uid, cancel.generation) == (d.job_uid, d.generation)
        job = client.get_job("j1")
        assert (job.binding_phase, job.generation) == ("Suspended", 1)
        # A late report from the old run changes nothing. The hub reads a stream's messages in
        # order, so once the heartbeat sent after it is recorded, the report has been handled too.
        agent.status(d.job_uid, d.generation, "Completed")
        free = units(cpu=64000, memory=2**38, pods=110, **{"nvidia.com/gpu": 3000})
        agent.send(
            heartbeat=agent_pb2.Heartbeat(nodes=[agent_pb2.NodeFree(name=agent.nodes[0].name, free=free)])
        )
        wait(
            lambda: dict(client.get_cluster("east").free.quantities).get("nvidia.com/gpu") == "3",
            what="heartbeat",
        )
        job = client.get_job("j1")
        assert (job.phase, job.binding_phase, job.generation) == ("Pending", "Suspended", 1)
        assert "Fenced" in [e.reason for e in client.explain_job("j1").events]
    finally:
        agent.close()


def test_no_cluster_fits_the_gang_and_the_reason_says_why(hub: Hub, client: Client) -> None:
    # 8 GPUs in all, but no node has the 4 free GPUs one pod needs.
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "small", nodes=4, gpus=2)
    try:
        agent.connect()
        client.submit_job(JOB % "big")
        job = wait(lambda: (j := client.get_job("big")).reason and j)
        assert job.binding_phase == "Suspended"
        # No node of any cluster has 4 GPUs even empty: the reason says the job can never fit today.
        assert "can never fit today" in job.reason and "the largest node has 2" in job.reason
        assert client.explain_job("big").decision == "Waiting"
    finally:
        agent.close()


def test_rejected_binding_is_requeued_and_the_cluster_skipped(hub: Hub, client: Client) -> None:
    a = ScriptedAgent(f"127.0.0.1:{hub.port}", "a")
    b = ScriptedAgent(f"127.0.0.1:{hub.port}", "b")
    try:
        a.connect()
        client.submit_job(JOB % "j1")
        d = a.expect("dispatch").dispatch
        b.connect()
        a.send(
            rejected=agent_pb2.BindingRejected(
                job_uid=d.job_uid, generation=d.generation, reason="gang did not fit within 60s"
            )
        )
        d2 = b.expect("dispatch").dispatch
        assert (d2.job_uid, d2.generation) == (d.job_uid, 2)
        reasons = [e.reason for e in client.explain_job("j1").events]
        assert "Rejected" in reasons
    finally:
        a.close()
        b.close()
