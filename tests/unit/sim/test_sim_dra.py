"""DRA through admission and the sim agents: a job claiming 2 devices of a DeviceClass per pod
waits where no node has 2 and runs where one has; the queue's ``deviceclass/<class>`` capability
holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from vglobal.agent.backends.sim_cluster import parse_sim_manifests
from vglobal.model.errors import ManifestError
from vglobal.sim.run import run_simulation

EXAMPLE = Path(__file__).parents[2] / "fixtures" / "dra" / "job.yaml"


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


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    # "ones" has 4 devices in all but one a node; "two" has one node of 2
    for name, text in {"ones": _cluster("ones", 4, 1), "two": _cluster("two", 1, 2)}.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(text)
    out["cpu"] = tmp_path / "cpu.yaml"
    out["cpu"].write_text(_cluster("cpu", 2, 0))
    return out


def test_a_node_group_reports_its_devices_as_deviceclass_resources() -> None:
    (cluster,) = parse_sim_manifests(_cluster("c", 1, 4))
    assert cluster.nodes[0].allocatable["deviceclass/gpu.example.com"] == 4000  # type: ignore[union-attr]
    with pytest.raises(ManifestError, match=r"spec\.nodeGroups\[0\]\.devices\[0\]\.deviceClass: required"):
        parse_sim_manifests(_cluster("c", 1, 4).replace("deviceClass: gpu.example.com, ", ""))


def test_the_claiming_job_waits_where_no_node_has_two_and_runs_where_one_has(files: dict[str, Path]) -> None:
    none = run_simulation(cluster_files=[files["cpu"]], jobs_path=EXAMPLE)
    (job,) = none["jobs"]
    assert (job["phase"], job["cluster"]) == ("Pending", None)
    assert job["reason"] == (
        "job needs deviceclass/gpu.example.com 2 but no schedulable cluster reports a DRA device of "
        "class gpu.example.com (no ResourceSlice offers one)"
    )
    ones = run_simulation(cluster_files=[files["ones"]], jobs_path=EXAMPLE)
    (job,) = ones["jobs"]
    assert (job["phase"], job["cluster"]) == ("Pending", None)
    assert job["reason"] == (
        "can never fit today: needs 2 deviceclass/gpu.example.com per pod, the largest node has 1; "
        "gang: 1 pod x {cpu: 1, deviceclass/gpu.example.com: 2, pods: 1}"
    )
    both = run_simulation(cluster_files=[files["ones"], files["two"]], jobs_path=EXAMPLE)
    (job,) = both["jobs"]
    assert (job["phase"], job["cluster"]) == ("Completed", "two")
    assert job["pods"][0]["node"] == "two-0"


def test_the_queue_capability_in_device_classes_holds(files: dict[str, Path], tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    three = text + "".join(
        "---\n" + text.split("---\n")[2].replace("name: dra-train", f"name: dra-train-{i}") for i in (1, 2)
    )
    jobs = tmp_path / "three.yaml"
    jobs.write_text(three)
    big = tmp_path / "big.yaml"
    big.write_text(_cluster("big", 3, 2))
    result = run_simulation(cluster_files=[big], jobs_path=jobs, until=30.0)
    phases = {j["name"]: (j["phase"], j["reason"] if j["phase"] == "Pending" else "") for j in result["jobs"]}
    assert phases["dra-train"][0] == phases["dra-train-1"][0] == "Running"
    assert phases["dra-train-2"] == (
        "Pending",
        "queue dra: capability deviceclass/gpu.example.com 4, allocated 4, job needs 2",
    )


def test_a_node_group_reports_a_shared_devices_capacity() -> None:
    text = _cluster("c", 1, 2).replace("count: 2}", "count: 2, capacity: {memory: 80Gi}}")
    (cluster,) = parse_sim_manifests(text)
    assert cluster.nodes[0].allocatable["deviceclass/gpu.example.com/memory"] == 2 * 80 * 2**30 * 1000  # type: ignore[union-attr]


SHARED = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: shared, namespace: default}
spec:
  minAvailable: 3
  tasks:
  - name: worker
    replicas: 3
    template:
      metadata:
        annotations: {vglobal.io/sim-duration: "60s"}
      spec:
        resourceClaims:
        - {name: gpu, resourceClaimName: one-gpu}
        containers:
        - name: c
          image: x
          resources:
            requests: {cpu: "1"}
            claims: [{name: gpu}]
"""


def test_pods_sharing_a_claim_take_its_device_once_and_run_on_its_node(tmp_path: Path) -> None:
    jobs = tmp_path / "shared.yaml"
    # "wide" shares a second claim, but its 3 pods of 3 cpus cannot sit on one 8-cpu node
    wide = SHARED.replace("one-gpu", "other-gpu").replace("name: shared", "name: wide")
    jobs.write_text(SHARED + "---\n" + wide.replace('requests: {cpu: "1"}', 'requests: {cpu: "3"}'))
    cluster = tmp_path / "mixed.yaml"
    # one node with the devices, two empty ones without that would take the pods otherwise
    cpu_group = _cluster("cpu", 2, 0).split("  nodeGroups:\n")[1]
    cluster.write_text(_cluster("mixed", 1, 2) + cpu_group)
    result = run_simulation(cluster_files=[cluster], jobs_path=jobs, until=30.0)
    by_name = {j["name"]: j for j in result["jobs"]}
    job = by_name["shared"]
    assert job["phase"] == "Running"  # 3 pods, one device: charged once
    assert {p["node"] for p in job["pods"]} == {"mixed-0"}  # all beside the claim's device
    assert by_name["wide"]["phase"] == "Pending"
    assert "didn't match pod affinity rules" in by_name["wide"]["reason"]
