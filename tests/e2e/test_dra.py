"""DRA end to end: `vglobal apply` of a ResourceClaimTemplate and the job claiming 2 devices through
it; the hub keeps it waiting, with the reason, while the only cluster has one device a node, and
runs it on the cluster that registers a node of two."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.harness import System, wait_for

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dra" / "job.yaml"


def _cluster(name: str, nodes: int, devices: int) -> str:
    return f"""\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - name: {name}
    count: {nodes}
    allocatable: {{cpu: "8", memory: 32Gi}}
    devices: [{{deviceClass: gpu.example.com, count: {devices}}}]
"""


def test_a_claiming_job_waits_for_a_node_with_two_devices_and_runs_there(system: System) -> None:
    system.start_hub()
    system.start_agent("ones", _cluster("ones", 4, 1))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "the cluster registered", system)
    out = system.cli("apply", "-f", str(FIXTURE)).stdout
    assert "resourceclaimtemplate.resource.k8s.io/default/two-gpus travels with dra-train" in out
    waiting = wait_for(lambda: (j := system.job("dra-train")) and j["reason"] and j, 30, "a reason", system)
    assert waiting["phase"] == "Pending" and waiting["cluster"] in ("", None)
    assert "needs 2 deviceclass/gpu.example.com per pod, the largest node has 1" in waiting["reason"]
    system.start_agent("two", _cluster("two", 1, 2))
    job = wait_for(
        lambda: (j := system.job("dra-train")) and j["phase"] == "Running" and j, 60, "running", system
    )
    assert job["cluster"] == "two"
    # the template travels with the job each time: applying the file again changes nothing
    assert "job.batch.volcano.sh/default/dra-train unchanged" in system.cli("apply", "-f", str(FIXTURE)).stdout
    assert system.cli("diff", "-f", str(FIXTURE), check=False).returncode == 0
    queue = next(q for q in system.get_json("queues") if q["name"] == "dra")
    assert queue["allocated"].get("deviceclass/gpu.example.com") == "2", queue
