"""A HyperJob admitted in place of lower-priority pods of its queue says so while they are evicted:
its waiting reason names the child, its cluster and its victims until the children run (held here
by agents that do not report them yet)."""

from __future__ import annotations

import io

from rich.console import Console

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from tests.integration.test_preempting_reason import CLASSES, QUEUE, _job
from vglobal.cli.hyperjobs import describe_hyperjob
from vglobal.client import Client
from vglobal.hub.server import Hub

HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: hj}
spec:
  replicatedJobs:
  - name: part
    replicas: 2
    templateSpec:
      queue: small
      priorityClassName: high
      tasks:
      - name: t
        replicas: 1
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "4"}}}]
"""


def test_a_hyperjob_names_each_child_waiting_for_a_preemption_and_its_cluster(
    hub: Hub, client: Client
) -> None:
    target = f"127.0.0.1:{hub.port}"
    east, west = (
        ScriptedAgent(target, "east", nodes=1, gpus=16),
        ScriptedAgent(target, "west", nodes=1, gpus=16),
    )
    try:
        east.connect()
        west.connect()
        client.apply_queue(QUEUE)  # capability: 8 GPUs
        for text in CLASSES:
            client.apply_priority_class(text)
        victim = _job("victim", "low", 2, 2).replace(
            "metadata: {name: victim}", "metadata: {name: victim, annotations: {vglobal.io/clusters: east}}"
        )
        client.submit_job(victim)
        d = east.expect("dispatch").dispatch
        east.accept(d.job_uid, d.generation)
        east.status(d.job_uid, d.generation, "Running")  # 2 pods x 4 GPUs: the queue's 8
        client.submit_job(HYPERJOB)
        # One decision: the child that takes the victim's place goes to east, its sibling to west.
        taker = east.expect("dispatch").dispatch
        other = west.expect("dispatch").dispatch
        assert list(taker.nominated_nodes) == ["east-0"], taker
        names = {j.uid: j.name for j in (client.get_job("hj-part-0"), client.get_job("hj-part-1"))}
        child = names[taker.job_uid]
        hj = client.get_hyperjob("hj")
        assert hj.phase == "Pending"
        assert hj.waiting_reason.startswith(
            f"HyperJob default/hj: child {child} admitted to east in place of"
        )
        assert "evicting job default/victim;" in hj.waiting_reason, hj.waiting_reason
        assert names[other.job_uid] not in hj.waiting_reason  # its sibling waits for nothing
        # `vglobal describe hyperjob`: under the child, and as the HyperJob's Waiting line.
        out = Console(file=io.StringIO(), width=400)
        describe_hyperjob(client, "hj", "default", out)
        text = out.file.getvalue()  # type: ignore[attr-defined]
        lines = [line.rstrip() for line in text.splitlines()]
        assert f"    {hj.waiting_reason}" in lines and f"Waiting:       {hj.waiting_reason}" in lines
        # The children run: the HyperJob no longer waits.
        for agent, m in ((east, taker), (west, other)):
            agent.accept(m.job_uid, m.generation)
            agent.status(m.job_uid, m.generation, "Running")
        wait(lambda: client.get_hyperjob("hj").phase == "Running")
        assert client.get_hyperjob("hj").waiting_reason == ""
    finally:
        east.close()
        west.close()
