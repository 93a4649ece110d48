"""A job admitted in place of lower-priority pods of its queue says so while they are evicted: its
reason names the victims and the cluster until its own pods run (held here by an agent that does
not report them yet)."""

from __future__ import annotations

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from vglobal.client import Client
from vglobal.hub.server import Hub

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: small}
spec: {weight: 1, capability: {nvidia.com/gpu: "8"}}
"""
CLASSES = [
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\n",
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
]


def _job(name: str, priority: str, replicas: int, min_available: int) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: small
  priorityClassName: {priority}
  minAvailable: {min_available}
  tasks:
  - name: t
    replicas: {replicas}
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", nvidia.com/gpu: "4"}}}}}}]
"""


def test_a_preemptor_names_its_victims_and_cluster_until_it_runs(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=16)
    try:
        agent.connect()
        client.apply_queue(QUEUE)
        for text in CLASSES:
            client.apply_priority_class(text)
        client.submit_job(_job("victim", "low", 2, 1))
        d = agent.expect("dispatch").dispatch
        agent.accept(d.job_uid, d.generation)
        agent.status(d.job_uid, d.generation, "Running")  # 2 pods x 4 GPUs: the queue's 8
        client.submit_job(_job("urgent", "high", 1, 1))
        u = agent.expect("dispatch").dispatch
        assert u.job_uid != d.job_uid
        # the node the victim frees, where the hub packed the preemptor (Volcano's nominatedNodeName)
        assert list(u.nominated_nodes) == ["east-0"], u
        explained = client.explain_job("urgent")
        assert explained.decision == "Admitted"
        assert explained.reason_kind == "Preempting", explained.reason
        # the victim (taken whole here: the scripted agent reports no pod uids) and the cluster
        assert explained.reason.startswith("admitted to east in place of"), explained.reason
        assert "evicting job default/victim;" in explained.reason, explained.reason  # by name, not uid
        # its pods run: the reason is no longer the preemption
        agent.accept(u.job_uid, u.generation)
        agent.status(u.job_uid, u.generation, "Running")
        wait(lambda: client.explain_job("urgent").reason_kind == "")
        assert client.explain_job("urgent").reason == "admitted to cluster east (generation 1)"
    finally:
        agent.close()
