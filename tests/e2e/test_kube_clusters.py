"""One hub, emulated Kubernetes clusters (tests/kubeapi, each its own process) and one agent with the
kube backend per cluster, all real processes on loopback: the examples run to completion as pods of
the emulated clusters, a hard-topology gang stays in one switch of HyperNodes read from the CRD, a
cluster whose API server stops answering fails over, an agent stopped after its API server went away
exits cleanly, and an agent killed with -9 is replaced by its standby without a duplicate pod."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import System, wait_for
from tests.kubeapi import EmulatorProcess, api_client

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]

KUBE_A = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: kube-a}
spec:
  nodeGroups:
  - name: a100-r0
    count: 2
    allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
    gpus: {count: 8, memoryMiB: 81920, model: A100}
  - name: a100-r1
    count: 2
    allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
    gpus: {count: 8, memoryMiB: 81920, model: A100}
  hyperNodes:
  - {name: tor-0, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "^a100-r0-"}}}]}
  - {name: tor-1, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "^a100-r1-"}}}]}
  - name: spine
    tier: 2
    members:
    - {type: HyperNode, selector: {exactMatch: {name: tor-0}}}
    - {type: HyperNode, selector: {exactMatch: {name: tor-1}}}
"""

KUBE_B = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: kube-b}
spec:
  nodeGroups:
  - name: cpu
    count: 6
    allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
    labels: {volcano.sh/tor: tor-3}
"""

DISCOVERY = """
networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      rack:
      - nodeLabel: volcano.sh/tor
      - nodeLabel: kubernetes.io/hostname
"""

HARD_GANG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: allreduce
  annotations: {vglobal.io/sim-duration: 2s}
spec:
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: x, resources: {requests: {cpu: "8", nvidia.com/gpu: "8"}}}]
"""


def emulator(tmp: Path, name: str, spec: str | None, *args: str) -> EmulatorProcess:
    extra: list[str] = []
    if spec is not None:
        path = tmp / f"{name}.yaml"
        path.write_text(spec)
        extra = ["--cluster", str(path)]
    return EmulatorProcess(tmp / f"{name}.kubeconfig", "--name", name, *extra, *args)


def pods(kubeconfig: Path, job: str, *, live: bool = False) -> list[Any]:
    from kubernetes import client

    api = api_client(kubeconfig)
    try:
        items = (
            client.CoreV1Api(api)
            .list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={job}")
            .items
        )
    finally:
        api.close()
    return [p for p in items if not (live and p.metadata.deletion_timestamp)]


def jobs(system: System) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in system.get_json("jobs")}


@pytest.fixture
def emulators(tmp_path: Path) -> Iterator[dict[str, EmulatorProcess]]:
    started: dict[str, EmulatorProcess] = {}
    try:
        started["kube-a"] = emulator(tmp_path, "kube-a", KUBE_A)
        started["kube-b"] = emulator(tmp_path, "kube-b", KUBE_B, "--no-hypernode-crd")
        yield started
    finally:
        for e in started.values():
            e.stop()


def test_examples_complete_on_kube_clusters_and_a_hard_gang_keeps_to_one_switch(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub()
    discovery = tmp_path / "discovery.yaml"
    discovery.write_text(DISCOVERY)
    a, b = emulators["kube-a"], emulators["kube-b"]
    system.start_kube_agent("a", a.kubeconfig, "--lease-duration", "0")  # name: the context's, kube-a
    system.start_kube_agent(
        "b",
        b.kubeconfig,
        "--label",
        "gpu=none",
        "--hypernode-discovery",
        str(discovery),
        "--lease-duration",
        "0",
    )
    wait_for(
        lambda: {c["name"] for c in system.get_json("clusters")} == {"kube-a", "kube-b"},
        60,
        "both registered",
        system,
    )
    tree = system.cli("get", "hypernodes", "--cluster", "kube-a").stdout
    assert "tor-0" in tree and "spine" in tree
    files = ["queues", "llm-pretrain", "ray-volcano-job", "tf-ps-worker", "preprocess", "network-topology"]
    system.cli("apply", *(a for f in files for a in ("-f", str(ROOT / "examples" / f"{f}.yaml"))))
    names = {"llm-pretrain", "ray-cluster-job", "tensorflow-dist-mnist", "preprocess-shards", "mindspore-cpu"}

    def all_done() -> dict[str, dict[str, Any]] | None:
        got = jobs(system)
        return got if names <= got.keys() and all(got[n]["phase"] == "Completed" for n in names) else None

    done = wait_for(all_done, 120, "the examples Completed", system)
    assert done["preprocess-shards"]["cluster"] == "kube-b" and done["llm-pretrain"]["cluster"] == "kube-a"
    trainers = pods(a.kubeconfig, "llm-pretrain")
    assert len(trainers) == 2 and all(p.status.phase == "Succeeded" for p in trainers)
    assert len(pods(b.kubeconfig, "preprocess-shards")) == 4

    (path := tmp_path / "allreduce.yaml").write_text(HARD_GANG)
    system.cli("apply", "-f", str(path))
    wait_for(
        lambda: jobs(system).get("allreduce", {}).get("phase") == "Completed", 60, "allreduce done", system
    )
    nodes = {p.spec.node_name for p in pods(a.kubeconfig, "allreduce")}
    assert nodes in ({"a100-r0-0", "a100-r0-1"}, {"a100-r1-0", "a100-r1-1"}), nodes

    # kube-b's API server goes away, then its agent is stopped: it says so and exits 0, no traceback.
    b.stop()
    agent = system.procs["agent-b"]
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(timeout=60) == 0, system.log("agent-b")
    log = system.whole_log("agent-b")
    assert "Traceback" not in log and "agent for cluster kube-b stopped" in log, log


def test_a_cluster_whose_api_server_stops_answering_fails_over_and_is_cleaned_up_after(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub("--cluster-timeout", "2s", "--failover-after", "2s")
    for name, emu in emulators.items():
        system.start_kube_agent(name, emu.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 2, 60, "both registered", system)
    (path := tmp_path / "long.yaml").write_text(
        HARD_GANG.replace("allreduce", "long")
        .replace("2s", "10m")
        .replace(', nvidia.com/gpu: "8"', "")
        .replace("networkTopology: {mode: hard, highestTierAllowed: 1}", "minAvailable: 2")
    )
    system.cli("apply", "-f", str(path))
    first = wait_for(
        lambda: (j := jobs(system).get("long")) and j["phase"] == "Running" and j["cluster"],
        60,
        "long running",
        system,
    )
    other = "kube-b" if first == "kube-a" else "kube-a"
    paused = emulators[first]
    paused.pause()
    try:
        moved = wait_for(
            lambda: (j := jobs(system)["long"])["cluster"] == other and j["phase"] == "Running",
            60,
            "long on the other cluster",
            system,
        )
        assert moved
        assert len(pods(emulators[other].kubeconfig, "long")) == 2
    finally:
        paused.resume()
    wait_for(
        lambda: not pods(paused.kubeconfig, "long", live=True), 60, "the stale run's pods deleted", system
    )
    assert jobs(system)["long"]["cluster"] == other


def test_the_standby_agent_takes_over_from_a_killed_one_without_duplicate_pods(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub()
    a = emulators["kube-a"]
    for replica in ("one", "two"):
        system.start_kube_agent(
            replica, a.kubeconfig, "--lease-duration", "2s", env={"POD_NAME": f"agent-{replica}"}
        )
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "the active replica registered", system)
    (path := tmp_path / "steady.yaml").write_text(
        HARD_GANG.replace("allreduce", "steady").replace("2s", "12s").replace(', nvidia.com/gpu: "8"', "")
    )
    system.cli("apply", "-f", str(path))
    wait_for(lambda: jobs(system).get("steady", {}).get("phase") == "Running", 60, "steady running", system)
    before = {p.metadata.uid for p in pods(a.kubeconfig, "steady")}
    holder = lease_holder(a.kubeconfig)
    active = "one" if holder.startswith("agent-one") else "two"
    system.kill(f"agent-{active}", signal.SIGKILL)
    wait_for(
        lambda: not lease_holder(a.kubeconfig).startswith(f"agent-{active}"),
        30,
        "the standby to hold the Lease",
        system,
    )
    done = wait_for(
        lambda: (j := jobs(system)["steady"])["phase"] in ("Completed", "Failed") and j,
        90,
        "steady done",
        system,
    )
    assert done["phase"] == "Completed" and done["cluster"] == "kube-a"
    assert {p.metadata.uid for p in pods(a.kubeconfig, "steady")} == before, "a pod was created twice"


def lease_holder(kubeconfig: Path) -> str:
    from kubernetes import client

    api = api_client(kubeconfig)
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease("vglobal-agent-kube-a", "default")
    finally:
        api.close()
    return str(lease.spec.holder_identity or "")
