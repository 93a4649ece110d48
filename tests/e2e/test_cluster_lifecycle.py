"""Member clusters as an operator inspects and removes them, through the console script against a
real hub and sim agents: `get nodes`, `describe cluster`, a job on a silent cluster saying so at
once, `cluster delete` refused while jobs run there, with --drain and --force, and bad names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.cli_run import vglobal
from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

LONG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: long
  annotations: {vglobal.io/sim-duration: 1h}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "2", memory: 1Gi, nvidia.com/gpu: "1"}}}]
"""


def cli(system: System, *args: str) -> Any:
    """``vglobal --hub HUB ARGS`` as a user types it."""
    return vglobal("--hub", system.target, *args)


def clusters(system: System) -> list[str]:
    return sorted(c["name"] for c in json.loads(cli(system, "get", "clusters", "-o", "json").stdout))


def job(system: System) -> dict[str, Any]:
    return next((j for j in json.loads(cli(system, "get", "jobs", "-o", "json").stdout) if j["name"] == "long"), {})


def test_describe_get_nodes_not_ready_and_delete(system: System) -> None:
    # A silent cluster turns NotReady after 2 s; its jobs would fail over only after 10 minutes.
    system.start_hub("--cluster-timeout", "2s", "--failover-after", "600s")
    system.start_agent("east", sim_cluster("east", nodes=2))
    wait_for(lambda: clusters(system) == ["east"], 60, "east to register", system)

    nodes = json.loads(cli(system, "get", "nodes", "-o", "json").stdout)
    assert [(n["name"], n["cluster"], n["status"]) for n in nodes] == [
        ("east-0", "east", "Ready"),
        ("east-1", "east", "Ready"),
    ]
    assert nodes[0]["allocatable"]["nvidia.com/gpu"] == "8" and nodes[0]["taints"] == []
    table = cli(system, "get", "nodes", "--cluster", "east").stdout
    assert table.split("\n")[0].split() == ["NAME", "CLUSTER", "STATUS", "ALLOCATABLE", "FREE"]
    assert "east-1" in table
    assert cli(system, "get", "node", "east-1", "-o", "name").stdout == "node/east-1\n"

    described = cli(system, "describe", "cluster", "east")
    assert described.returncode == 0, described.stderr
    for line in ("Name:", "State:", "Labels:", "Capacity:", "Free:", "Last heartbeat:", "NotReady since:"):
        assert line in described.stdout, described.stdout
    assert "region=east" in described.stdout and "nvidia.com/gpu=16" in described.stdout
    assert "east-0  Ready" in described.stdout and "taints:      <none>" in described.stdout
    assert "Kinds missing:  <none>" in described.stdout
    assert "batch.volcano.sh/v1alpha1 Job" in described.stdout and "apps/v1 Deployment" in described.stdout

    (system.tmp / "long.yaml").write_text(LONG)
    assert cli(system, "apply", "-f", str(system.tmp / "long.yaml")).returncode == 0
    wait_for(lambda: job(system).get("phase") == "Running", 60, "long to run on east", system)
    assert "default/long (1 pods, Running)" in cli(system, "describe", "cluster", "east").stdout

    # Jobs there: refused, naming the way out; nothing changed.
    refused = cli(system, "cluster", "delete", "east")
    assert refused.returncode == 1
    assert "FAILED_PRECONDITION" in refused.stderr and "--drain" in refused.stderr and "--force" in refused.stderr
    assert clusters(system) == ["east"] and job(system)["cluster"] == "east"
    # An unknown name: NOT_FOUND naming it, nothing changed.
    for args in (["cluster", "delete", "nope", "--force"], ["describe", "cluster", "nope"],
                 ["get", "nodes", "--cluster", "nope"]):  # fmt: skip
        bad = cli(system, *args)
        assert bad.returncode == 1 and "NOT_FOUND" in bad.stderr and '"nope"' in bad.stderr, (args, bad.stderr)
    assert clusters(system) == ["east"]
    both = cli(system, "cluster", "delete", "east", "--drain", "--force")
    assert both.returncode != 0 and "--drain and --force" in both.stderr

    # The agent stops: the job says so as soon as the cluster is NotReady, with an event.
    system.kill("agent-east")
    said = wait_for(lambda: (j := job(system)).get("reasonKind") == "ClusterNotReady" and j, 30, "the reason", system)
    assert said["phase"] == "Running" and "cluster east is NotReady" in said["reason"]
    events = cli(system, "describe", "job", "long").stdout
    assert "ClusterNotReady" in events and "cluster east is NotReady" in events
    described = cli(system, "describe", "cluster", "east").stdout
    assert ["State:", "NotReady"] in [line.split() for line in described.splitlines()], described
    assert "NotReady since: -" not in described

    # --drain: the job is re-queued and runs on the cluster that is left.
    system.start_agent("west", sim_cluster("west", nodes=1, region="west"))
    wait_for(lambda: clusters(system) == ["east", "west"], 60, "west to register", system)
    gone = cli(system, "cluster", "delete", "east", "--drain")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.strip() == "cluster.vglobal.io/east deleted (1 jobs re-queued)"
    assert clusters(system) == ["west"]
    assert [n["cluster"] for n in json.loads(cli(system, "get", "nodes", "-o", "json").stdout)] == ["west"]
    wait_for(lambda: job(system).get("cluster") == "west" and job(system)["phase"] == "Running", 60,
             "long to run on west", system)  # fmt: skip
    assert "drained and deleted" in cli(system, "describe", "job", "long").stdout

    # --force with the job there: re-queued as failed over; a cluster without jobs needs no flag.
    system.start_agent("spare", sim_cluster("spare", nodes=1, region="west"))
    wait_for(lambda: clusters(system) == ["spare", "west"], 60, "spare to register", system)
    system.kill("agent-spare")
    system.kill("agent-west")
    assert cli(system, "cluster", "delete", "spare").stdout.strip() == "cluster.vglobal.io/spare deleted"
    forced = cli(system, "cluster", "delete", "west", "--force")
    assert forced.stdout.strip() == "cluster.vglobal.io/west deleted (1 jobs re-queued)", forced.stderr
    assert clusters(system) == []
    after = job(system)
    assert after["phase"] == "Pending" and after["cluster"] == ""
    assert cli(system, "get", "nodes", "-o", "json").stdout.strip() == "[]"
