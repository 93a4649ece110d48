"""Elastic gangs through the hub: a job is admitted on its gang (minAvailable pods), its queue is
charged that until its pods run, then what they hold; ListQueues shows running and reserved apart."""

from __future__ import annotations

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from vglobal.client import Client
from vglobal.hub.server import Hub
from vglobal.store.engine import session_scope
from vglobal.store.repo.jobs import statics

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: small}
spec: {weight: 1, capability: {nvidia.com/gpu: "8"}}
"""
ELASTIC = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: elastic}
spec:
  queue: small
  minAvailable: 2
  tasks:
  - name: t
    replicas: 4
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "4"}}}]
"""


def _gpus(rl: object) -> str:
    return dict(rl.quantities).get("nvidia.com/gpu", "0")  # type: ignore[attr-defined]


def test_elastic_job_is_admitted_on_its_gang_and_charged_what_runs(hub: Hub, client: Client) -> None:
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=8)
    try:
        agent.connect()
        client.apply_queue(QUEUE)
        # 4 pods x 4 GPUs = 16 is over the queue's 8, but the gang of 2 (8 GPUs) is within it.
        client.submit_job(ELASTIC)
        d = agent.expect("dispatch").dispatch
        job = client.get_job("elastic")
        assert dict(job.request.quantities)["nvidia.com/gpu"] == "16"  # the whole job stays visible
        q = client.get_queue("small")
        assert (_gpus(q.allocated), _gpus(q.reserved), _gpus(q.running)) == ("8", "8", "0")
        agent.accept(d.job_uid, d.generation)
        agent.status(d.job_uid, d.generation, "Running", pods=2)
        wait(lambda: _gpus(client.get_queue("small").running) == "8")
        q = client.get_queue("small")
        assert (_gpus(q.allocated), _gpus(q.reserved)) == ("8", "0")
    finally:
        agent.close()


PINNED = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pinned}
spec:
  minAvailable: 1
  tasks:
  - name: labelled
    replicas: 1
    template:
      metadata: {labels: {volcano.sh/preemptable: "false"}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
  - name: overridden
    replicas: 1
    template:
      metadata:
        labels: {volcano.sh/preemptable: "false"}
        annotations: {volcano.sh/preemptable: "true"}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
  - name: free
    replicas: 1
    template:
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
"""


def test_a_task_labelled_not_preemptable_is_never_a_victim(hub: Hub, client: Client) -> None:
    """Volcano reads volcano.sh/preemptable from the pod's annotations, then from its labels."""
    job = client.submit_job(PINNED).job
    with session_scope(hub.ctx.sessions) as session:
        (got,) = list(statics([job.uid], session=session))
    assert got.unpreemptable == frozenset({"labelled"})


CPU_QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: capped}
spec: {weight: 1, capability: {cpu: "50"}, guarantee: {resource: {cpu: "4"}}}
"""


def _cpu_job(name: str, cluster: str, replicas: int) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{vglobal.io/clusters: {cluster}}}}}
spec:
  queue: capped
  minAvailable: 2
  tasks:
  - name: t
    replicas: {replicas}
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "2"}}}}}}]
"""


def test_a_dispatch_carries_the_queue_limits_and_what_the_queue_holds_elsewhere(
    hub: Hub, client: Client
) -> None:
    """The agent's room for the queue: the hub's capability less what the queue's jobs hold on
    the other clusters, as the latest cycle counted them."""
    west = ScriptedAgent(f"127.0.0.1:{hub.port}", "west", nodes=1, gpus=0)
    east = ScriptedAgent(f"127.0.0.1:{hub.port}", "east", nodes=1, gpus=0)
    try:
        west.connect()
        east.connect()
        client.apply_queue(CPU_QUEUE)
        client.submit_job(_cpu_job("w", "west", 10))
        d = west.expect("dispatch").dispatch
        (q,) = d.queues
        # the cycle's real capability: the spec's 50 cpu, the federation's total on the rest
        assert q.capability.values["cpu"] == 50_000 and dict(q.guarantee.values) == {"cpu": 4_000}
        assert dict(q.elsewhere.values) == {}  # nothing of the queue runs on another cluster
        west.accept(d.job_uid, d.generation)
        west.status(d.job_uid, d.generation, "Running", pods=7)  # 7 pods of 2 cpu
        wait(lambda: dict(client.get_queue("capped").running.quantities).get("cpu") == "14")
        client.submit_job(_cpu_job("e", "east", 4))
        (q,) = east.expect("dispatch").dispatch.queues
        assert q.capability.values["cpu"] == 50_000
        assert dict(q.elsewhere.values)["cpu"] == 14_000
    finally:
        west.close()
        east.close()
