"""`describe job` through a real hub shows each cluster's placement verdict for a waiting job,
with its queue's inherited data-locality setting applied to the job's own datasets."""

from __future__ import annotations

from click.testing import CliRunner

from tests.integration.agent_driver import ScriptedAgent
from vglobal.cli.main import cli
from vglobal.client import Client
from vglobal.hub.server import Hub

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: %s
  annotations: {%s}
spec: {parent: %s}
"""
JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: reader, annotations: {vglobal.io/datasets: imagenet}}
spec:
  queue: vision
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_describe_job_shows_each_clusters_placement_verdict(hub: Hub, client: Client) -> None:
    client.apply_queue(QUEUE % ("research", "vglobal.io/data-locality: required", "root"))
    client.apply_queue(QUEUE % ("vision", "", "research"))
    agents = [ScriptedAgent(f"127.0.0.1:{hub.port}", c) for c in ("east", "west")]
    try:
        for a in agents:
            a.connect()
        client.submit_job(JOB)
        base = ["--hub", f"127.0.0.1:{hub.port}"]
        out = CliRunner().invoke(cli, [*base, "describe", "job", "reader"])
        assert (
            "Placement (per cluster):\n"
            "  east: filtered: data locality required: does not hold dataset imagenet\n"
            "  west: filtered: data locality required: does not hold dataset imagenet\n"
        ) in out.stdout, out.output
    finally:
        for a in agents:
            a.close()
