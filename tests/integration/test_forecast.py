"""Predicted starts through a real hub: the leader's replay of admission on the live state puts
each waiting job's expected start, cluster and place in its queue on the API."""

from __future__ import annotations

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from tests.integration.test_reclaim import run_on
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub
from vglobal.sdk.rows import starts_in

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %s, annotations: {%s}}
spec:
  queue: default
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "%d"}}}]
"""


def test_waiting_jobs_get_the_start_the_replay_predicts(database_url: str) -> None:
    hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.2, forecast_interval=0.2))
    hub.start()
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=8)
    try:
        agent.connect()
        with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as client:
            client.submit_job(JOB % ("a1", "vglobal.io/expected-duration: 10m", 4))
            run_on(agent, agent.expect("dispatch").dispatch, "a1", 4)
            wait(lambda: client.get_job("a1").binding_phase == "Running")
            client.submit_job(JOB % ("a2", "vglobal.io/expected-duration: 5m", 8))
            client.submit_job(JOB % ("a3", "", 8))
            client.submit_job(JOB % ("a4", "", 8))
            a1 = client.get_job("a1")
            for name in ("a2", "a3", "a4"):
                wait(lambda n=name: client.get_job(n).HasField("estimate_computed_at"))  # type: ignore[misc]
            a2, a3, a4 = (client.get_job(n) for n in ("a2", "a3", "a4"))
            started = a1.updated_at.ToDatetime().timestamp()
            # a1 ends 10 min after its dispatch; a2 then runs 5 min; a3's run time is unknown
            assert a2.estimated_cluster == "east" and a2.jobs_ahead == 0
            assert abs(a2.estimated_start.ToDatetime().timestamp() - (started + 600)) < 30
            assert a3.jobs_ahead == 1
            assert abs(a3.estimated_start.ToDatetime().timestamp() - (started + 900)) < 30
            assert not a4.HasField("estimated_start") and a4.jobs_ahead == 2
            assert starts_in(a4, 0) == "unknown (behind 2 jobs of queue default)"
            now = a2.estimate_computed_at.ToDatetime().timestamp()
            assert starts_in(a3, now).startswith("in about 15 min on east, behind 1 job of queue default")
            listed = {j.name: j for j in client.list_jobs()}
            assert listed["a3"].estimated_start == a3.estimated_start
            assert not listed["a1"].HasField("estimate_computed_at")  # running: no estimate
    finally:
        agent.close()
        hub.shutdown()
