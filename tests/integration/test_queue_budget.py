"""A GPU-hour budget through a real hub: what a queue's jobs hold is charged to it, and once spent
its next job waits naming the budget while other queues' jobs run."""

from __future__ import annotations

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from tests.integration.test_reclaim import JOB, QUEUE, run_on
from vglobal.client import Client
from vglobal.sdk.rows import budget_text

# 7.2 GPU-seconds: four GPUs spend it within two seconds
BUDGETED = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team, annotations: {vglobal.io/gpu-hours-budget: "0.002", vglobal.io/budget-period: 24h}}
spec: {weight: 1}
"""


def test_a_queue_over_its_gpu_hour_budget_waits_naming_it(hub: object, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=8)  # type: ignore[attr-defined]
    try:
        agent.connect()
        client.apply_queue(BUDGETED)
        client.apply_queue(QUEUE % "other")
        client.submit_job(JOB % ("t1", "team"))
        run_on(agent, agent.expect("dispatch").dispatch, "t1", 4)
        wait(lambda: client.get_queue("team").spent_gpu_hours >= 0.002, timeout=30.0)
        client.submit_job(JOB % ("t2", "team"))
        client.submit_job(JOB % ("o1", "other"))
        wait(lambda: client.get_job("t2").reason_kind == "OverBudget", timeout=30.0)
        t2 = client.get_job("t2")
        assert t2.binding_phase == "Suspended"
        assert "queue team spent" in t2.reason and "of its 0.002 GPU-hour budget over the last 1 day" in t2.reason
        assert agent.expect("dispatch").dispatch.job_uid == client.get_job("o1").uid  # other queues run
        q = client.get_queue("team")
        assert q.budget_gpu_hours == 0.002 and q.budget_period_seconds == 86400
        assert budget_text(q).endswith("GPU-hours over 1 day (" + f"{100 * q.spent_gpu_hours / 0.002:.0f} %)")
    finally:
        agent.close()
