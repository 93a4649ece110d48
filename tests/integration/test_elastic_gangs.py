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
