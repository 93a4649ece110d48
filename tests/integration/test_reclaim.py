"""Cross-cluster reclaim through the hub: a queue below its share takes a whole job back."""

from __future__ import annotations

import sqlalchemy as sa

from tests.integration.agent_driver import ScriptedAgent, units
from tests.integration.polling import wait
from vglobal.api.v1 import agent_pb2
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.metrics import REGISTRY
from vglobal.hub.server import Hub
from vglobal.store.engine import make_engine
from vglobal.store.tables import admission_claims

CYCLES = "vglobal_dispatch_cycle_seconds_count"
RECLAIMS = "vglobal_reclaims_total"


def _sample(name: str) -> float:
    """A metric of the hub in this process (its registry is the module's)."""
    return REGISTRY.get_sample_value(name) or 0.0


QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: %s}
spec: {weight: 1}
"""

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %s}
spec:
  queue: %s
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "4"}}}]
"""


def run_on(agent: ScriptedAgent, d: agent_pb2.Dispatch, name: str, gpus_left: int) -> None:
    """Accept, report the node's new free capacity, then the pod running on it."""
    node = agent.nodes[0].name
    agent.accept(d.job_uid, d.generation)
    free = units(cpu=60000, memory=2**38, pods=108, **{"nvidia.com/gpu": gpus_left * 1000})
    agent.send(heartbeat=agent_pb2.Heartbeat(nodes=[agent_pb2.NodeFree(name=node, free=free)]))
    agent.send(
        status=agent_pb2.JobStatus(
            job_uid=d.job_uid,
            generation=d.generation,
            phase="Running",
            placements=[agent_pb2.PodPlacement(pod=f"{name}-t-0", task="t", node=node, phase="Running")],
        )
    )


def test_queue_below_share_reclaims_the_newest_job_of_a_queue_above(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=8)
    try:
        agent.connect()
        client.apply_queue(QUEUE % "a")
        client.apply_queue(QUEUE % "b")
        for name, left in (("a1", 4), ("a2", 0)):
            client.submit_job(JOB % (name, "a"))
            d = agent.expect("dispatch").dispatch
            run_on(agent, d, name, left)
            wait(lambda n=name: client.get_job(n).binding_phase == "Running")  # type: ignore[misc]
        # b deserves half of the 8 GPUs and has nothing: a's newest job gives way.
        client.submit_job(JOB % ("b1", "b"))
        cancel = agent.expect("cancel").cancel
        a2 = client.get_job("a2")
        assert cancel.job_uid == a2.uid
        assert a2.binding_phase == "Suspended"
        assert "Reclaimed" in [e.reason for e in client.explain_job("a2").events]
        assert client.get_job("a1").binding_phase == "Running"
        # Once the agent has stopped a2 and reports its GPUs free, b1 gets them, and a2 waits.
        agent.send(status=agent_pb2.JobStatus(job_uid=a2.uid, generation=cancel.generation, phase="Aborted"))
        free = units(cpu=62000, memory=2**38, pods=109, **{"nvidia.com/gpu": 4000})
        agent.send(
            heartbeat=agent_pb2.Heartbeat(nodes=[agent_pb2.NodeFree(name=agent.nodes[0].name, free=free)])
        )
        d = agent.expect("dispatch").dispatch
        assert d.job_uid == client.get_job("b1").uid
        assert client.get_job("a2").binding_phase == "Suspended"
    finally:
        agent.close()


def test_reclaim_min_runtime_keeps_a_job_that_just_started(database_url: str) -> None:
    settings = HubSettings(
        listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.2, reclaim_min_runtime=3600
    )
    hub = Hub(settings)
    hub.start()
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=8)
    try:
        with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as client:
            agent.connect()
            client.apply_queue(QUEUE % "a")
            client.apply_queue(QUEUE % "b")
            for name, left in (("a1", 4), ("a2", 0)):
                client.submit_job(JOB % (name, "a"))
                run_on(agent, agent.expect("dispatch").dispatch, name, left)
                wait(lambda n=name: client.get_job(n).binding_phase == "Running")  # type: ignore[misc]
            client.submit_job(JOB % ("b1", "b"))
            # b1 waits for a reason, cycle after cycle, and nothing of a's is taken back
            wait(lambda: "no cluster fits" in client.get_job("b1").reason)
            cycles, reclaims = _sample(CYCLES), _sample(RECLAIMS)
            wait(lambda: _sample(CYCLES) >= cycles + 5, what="five more dispatch cycles")
            assert _sample(RECLAIMS) == reclaims  # five cycles saw b1 wait and took nothing back
            assert [client.get_job(n).binding_phase for n in ("a1", "a2", "b1")] == [
                "Running",
                "Running",
                "Suspended",
            ]
            assert all(m.WhichOneof("body") != "cancel" for m in list(agent.received.queue))
    finally:
        agent.close()
        hub.shutdown()


def test_the_room_a_reclaim_frees_stays_claimed_in_postgres_until_the_reclaimer_runs(
    hub: Hub, client: Client, database_url: str
) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=8)
    try:
        agent.connect()
        client.apply_queue(QUEUE % "a")
        client.apply_queue(QUEUE % "b")
        for name, left in (("a1", 4), ("a2", 0)):
            client.submit_job(JOB % (name, "a"))
            d = agent.expect("dispatch").dispatch
            run_on(agent, d, name, left)
            wait(lambda n=name: client.get_job(n).binding_phase == "Running")  # type: ignore[misc]
        client.submit_job(JOB % ("b1", "b"))
        cancel = agent.expect("cancel").cancel
        b1 = client.get_job("b1").uid
        # The agent has not reported a2's pods gone: the hub's next cycles take no second victim,
        # and a2, re-queued, waits behind the job it was taken for.
        wait(lambda: client.get_job("a2").reason_kind == "Claimed", 15, "a2 to wait behind b1")
        engine = make_engine(database_url)
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.select(admission_claims.c.claim)).scalars().all()
        finally:
            engine.dispose()
        assert [(r["for"], r["cluster"], r["victims"]) for r in rows] == [(b1, "east", [cancel.job_uid])]
        assert client.get_job("a1").binding_phase == "Running"
        gone = agent_pb2.JobStatus(job_uid=cancel.job_uid, generation=cancel.generation, phase="Aborted")
        agent.send(status=gone)
        free = units(cpu=62000, memory=2**38, pods=109, **{"nvidia.com/gpu": 4000})
        agent.send(
            heartbeat=agent_pb2.Heartbeat(nodes=[agent_pb2.NodeFree(name=agent.nodes[0].name, free=free)])
        )
        assert agent.expect("dispatch").dispatch.job_uid == b1
    finally:
        agent.close()
