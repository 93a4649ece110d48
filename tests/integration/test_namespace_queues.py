"""Queues for tenants through a real hub: a job that names no queue goes to its Namespace's
queue annotation, a queue's placement applies to its jobs and is inherited by its children, and
bad input is refused naming the field, storing nothing."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from tests.integration.agent_driver import ScriptedAgent
from vglobal.cli.main import cli
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub

NAMESPACE = """
apiVersion: v1
kind: Namespace
metadata:
  name: %s
  annotations: {scheduling.volcano.sh/queue-name: %s}
"""

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: %s
  annotations: {%s}
spec: {parent: %s}
"""


def job(name: str, namespace: str, extra: str = "") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: {namespace}, annotations: {{{extra}}}}}
spec:
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def test_a_job_naming_no_queue_takes_its_namespace_queue_and_the_queue_chain_placement(
    hub: Hub, client: Client, tmp_path: Path
) -> None:
    # tenants sends its jobs to west; team-a, its child, says nothing and inherits it.
    client.apply_queue(QUEUE % ("tenants", "vglobal.io/clusters: west", "root"))
    client.apply_queue(QUEUE % ("team-a", "", "tenants"))
    path = tmp_path / "ns.yaml"
    # The job first in the file: apply makes the Namespace before any job.
    path.write_text(job("inherits", "ml") + "---" + NAMESPACE % ("ml", "team-a"))
    base = ["--hub", f"127.0.0.1:{hub.port}"]
    applied = CliRunner().invoke(cli, [*base, "apply", "-f", str(path)])
    assert "namespace/ml created" in applied.stdout, applied.output
    assert "job.batch.volcano.sh/ml/inherits created" in applied.stdout, applied.output
    assert "namespace/ml unchanged" in CliRunner().invoke(cli, [*base, "apply", "-f", str(path)]).stdout
    described = CliRunner().invoke(cli, [*base, "describe", "queue", "team-a"])
    assert "  vglobal.io/clusters: west (from queue tenants)" in described.stdout, described.output
    listed = CliRunner().invoke(cli, [*base, "get", "namespaces"])
    assert "ml" in listed.stdout and "team-a" in listed.stdout, listed.output

    agents = [ScriptedAgent(f"127.0.0.1:{hub.port}", c) for c in ("east", "west")]
    try:
        for a in agents:
            a.connect()
        east, west = agents
        d = west.expect("dispatch").dispatch  # binpack on a tie would take east, the first by name
        got = client.get_job("inherits", "ml")
        assert (got.queue, got.uid) == ("team-a", d.job_uid)
        submitted = [e for e in client.explain_job("inherits", "ml").events if e.reason == "Submitted"]
        assert "queue team-a (from namespace ml annotation scheduling.volcano.sh/queue-name)" in (
            submitted[0].message
        )
        # The job's own annotation wins over its queue's.
        client.submit_job(job("own", "ml", "vglobal.io/clusters: east"))
        assert east.expect("dispatch").dispatch.job_uid == client.get_job("own", "ml").uid
        # A job naming its queue keeps it; one in a namespace the hub does not hold goes to default.
        named = client.submit_job(job("named", "ml").replace("spec:\n", "spec:\n  queue: default\n", 1))
        assert named.job.queue == "default"
        assert client.submit_job(job("plain", "other")).job.queue == "default"
        # Applied again with a new label, the job stays in the queue it was given.
        relabelled = job("inherits", "ml").replace("namespace: ml,", "namespace: ml, labels: {v: '2'},")
        again = client.apply_job(relabelled)
        assert (again.result, again.job.queue) == ("configured", "team-a")

        with pytest.raises(VGlobalError) as err:
            client.delete_namespace("ml")
        assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert 'namespace "ml" has 3 unfinished jobs' in err.value.message
    finally:
        for a in agents:
            a.close()
    for name in ("inherits", "own", "named"):
        client.delete_job(name, "ml")
    deleted = CliRunner().invoke(cli, [*base, "delete", "namespace", "ml"])
    assert "namespace/ml deleted" in deleted.stdout, deleted.output
    assert client.list_namespaces() == []


def test_bad_namespaces_and_queue_policies_are_refused_naming_the_field(client: Client) -> None:
    with pytest.raises(VGlobalError) as err:
        client.apply_namespace(NAMESPACE % ("ml", "Team_A"))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "metadata.annotations[scheduling.volcano.sh/queue-name]" in err.value.message
    with pytest.raises(VGlobalError) as err:
        client.apply_namespace(NAMESPACE % ("Bad.Name", "team-a"))
    assert "metadata.name" in err.value.message
    assert client.list_namespaces() == []
    # A namespace may name a queue not made yet; its jobs are refused until it is.
    client.apply_namespace(NAMESPACE % ("ml", "later"))
    with pytest.raises(VGlobalError) as err:
        client.submit_job(job("train", "ml"))
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    assert 'namespace "ml" names queue "later" (scheduling.volcano.sh/queue-name)' in err.value.message

    with pytest.raises(VGlobalError) as err:
        client.apply_queue(QUEUE % ("team-b", "vglobal.io/cluster-preference: 'west,west'", "root"))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        "metadata.annotations[vglobal.io/cluster-preference]: a cluster is named twice" in err.value.message
    )
    with pytest.raises(VGlobalError) as err:
        client.apply_queue(QUEUE % ("team-b", "vglobal.io/clusters: Not_A_Cluster", "root"))
    assert "metadata.annotations[vglobal.io/clusters]" in err.value.message
    with pytest.raises(VGlobalError) as err:
        client.apply_queue(QUEUE % ("team-b", "vglobal.io/cluster-selector: gpu", "root"))
    assert 'metadata.annotations[vglobal.io/cluster-selector]: "gpu" is not a label requirement' in (
        err.value.message
    )
    assert "team-b" not in [q.name for q in client.list_queues()]
