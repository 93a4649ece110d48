"""Real pods through vglobal: two kind clusters, the agent installed from deploy/ in each (two
replicas, one active through a Lease), a TLS hub on this host, Volcano Jobs whose busybox
containers really run, exit with real codes, and survive the loss of the active agent.

Run it where Docker and kind are (README, "Run on Kubernetes"):
    .venv/bin/python -m pytest -m kind tests/kind -v
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.kind.harness import (
    BUSYBOX,
    CLUSTER_CONFIGS,
    IMAGE,
    ROOT,
    Cluster,
    Hub,
    agent_logs,
    create_cluster,
    fake_gpus,
    hub_host,
    install_agent,
    run,
    wait_for,
)


@dataclass
class Kind:
    hub: Hub
    a: Cluster
    b: Cluster
    gpus: dict[str, dict[str, int]]
    workdir: Path

    def apply(self, name: str, text: str) -> None:
        path = self.workdir / f"{name}.yaml"
        path.write_text(text)
        self.hub.vglobal("apply", "-f", str(path))


@pytest.fixture(scope="module")
def kind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kind]:
    workdir = tmp_path_factory.mktemp("kind")
    clusters = [create_cluster(config, workdir) for config in CLUSTER_CONFIGS]
    hub = Hub(workdir=workdir, host=hub_host())
    try:
        gpus = {c.name: fake_gpus(c) for c in clusters}
        run(
            "docker", "build", "-f", str(ROOT / "deploy" / "Dockerfile"), "-t", IMAGE, str(ROOT), timeout=1200
        )
        run("docker", "pull", BUSYBOX)
        for c in clusters:
            run("kind", "load", "docker-image", IMAGE, BUSYBOX, "--name", c.name)
        hub.init_certs([c.name for c in clusters])
        hub.start()
        for c in clusters:
            install_agent(c, hub)
        a, b = clusters
        yield Kind(hub=hub, a=a, b=b, gpus=gpus, workdir=workdir)
    finally:
        hub.stop()
        for c in clusters:
            if c.created and not _keep():
                run("kind", "delete", "cluster", "--name", c.name)


def _keep() -> bool:
    return os.environ.get("VGLOBAL_KIND_KEEP") == "1"


def job(
    name: str, cluster: str, command: str, *, replicas: int = 1, gpus: int = 0, extra_spec: str = ""
) -> str:
    limits = f"\n              limits: {{nvidia.com/gpu: {gpus}}}" if gpus else ""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{vglobal.io/clusters: {cluster}}}
spec:
  queue: default{extra_spec}
  tasks:
  - name: main
    replicas: {replicas}
    template:
      spec:
        restartPolicy: Never
        terminationGracePeriodSeconds: 1
        containers:
        - name: main
          image: {BUSYBOX}
          imagePullPolicy: IfNotPresent
          command: ["sh", "-c", "{command}"]
          resources:
            requests: {{cpu: 50m, memory: 16Mi}}{limits}
"""


def test_both_clusters_register_with_their_gpus_and_switches(kind: Kind) -> None:
    def ready() -> dict[str, dict[str, Any]] | None:
        rows = {c["name"]: c for c in kind.hub.get("clusters")}
        names = {kind.a.name, kind.b.name}
        return rows if names <= rows.keys() and all(rows[n]["state"] == "Ready" for n in names) else None

    rows = wait_for(ready, 180, "both clusters Ready", lambda: agent_logs(kind.a) + agent_logs(kind.b))
    for cluster in (kind.a, kind.b):
        capacity = rows[cluster.name]["capacity"]
        assert capacity.get("nvidia.com/gpu") == str(sum(kind.gpus[cluster.name].values()))
        tors = json.loads(kind.hub.vglobal("get", "hypernodes", "--cluster", cluster.name, "-o", "json"))
        tier1 = {h["name"] for h in tors if h["tier"] == 1}
        workers = cluster.json("get", "nodes", "-l", "volcano.sh/tor")["items"]
        want = {n["metadata"]["labels"]["volcano.sh/tor"] for n in workers}
        assert len(tier1) == len(want) and all(any(t in name for name in tier1) for t in want), tier1


def test_jobs_run_real_containers_to_completed_and_failed(kind: Kind) -> None:
    kind.apply("sleep-a", job("sleep-a", kind.a.name, "sleep 5", replicas=2))
    kind.apply(
        "gpu-tor",
        job(
            "gpu-tor",
            kind.b.name,
            "sleep 3",
            replicas=2,
            gpus=8,
            extra_spec="\n  networkTopology: {mode: hard, highestTierAllowed: 1}",
        ),
    )
    # Exit code 3 restarts the task once (maxRetry 1), then the job fails.
    kind.apply(
        "exit-three",
        job(
            "exit-three",
            kind.a.name,
            "exit 3",
            extra_spec="\n  maxRetry: 1\n  policies: [{exitCode: 3, action: RestartTask}]",
        ),
    )

    done = kind.hub.wait_job("sleep-a", {"Completed", "Failed", "Aborted"})
    assert done["phase"] == "Completed" and done["cluster"] == kind.a.name
    pods = kind.a.pods("sleep-a")
    assert sorted(p["metadata"]["name"] for p in pods) == ["sleep-a-main-0", "sleep-a-main-1"]
    for p in pods:
        assert p["spec"]["schedulerName"] == "vglobal"
        assert p["status"]["phase"] == "Succeeded"
        assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0

    gpu = kind.hub.wait_job("gpu-tor", {"Completed", "Failed", "Aborted"})
    assert gpu["phase"] == "Completed" and gpu["cluster"] == kind.b.name
    nodes = {p["spec"]["nodeName"] for p in kind.b.pods("gpu-tor")}
    node_tors = {
        n["metadata"]["labels"]["volcano.sh/tor"]
        for n in kind.b.json("get", "nodes")["items"]
        if n["metadata"]["name"] in nodes
    }
    # Two whole 8-GPU nodes under one switch: the two H100 nodes of tor-b1, never the L40S of tor-b2.
    assert len(nodes) == 2 and node_tors == {"tor-b1"}, (
        f"a hard tier-1 gang spans switches: {nodes} -> {node_tors}"
    )

    failed = kind.hub.wait_job("exit-three", {"Completed", "Failed", "Aborted"})
    assert failed["phase"] == "Failed" and failed["retryCount"] == 1
    described = kind.hub.vglobal("describe", "job", "exit-three")
    assert "RestartTask" in described


def test_standby_agent_takes_over_and_running_jobs_complete(kind: Kind) -> None:
    cluster = kind.a
    kind.apply("long-a", job("long-a", cluster.name, "sleep 40", replicas=2))

    def running() -> list[dict[str, Any]] | None:
        pods = cluster.pods("long-a")
        return pods if len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods) else None

    before = wait_for(running, 180, "long-a's pods Running", kind.hub.dump)
    uids = {p["metadata"]["uid"] for p in before}
    holder = wait_for(cluster.lease_holder, 60, "a Lease holder among the agent pods")
    (standby,) = [p for p in cluster.agent_pods() if p != holder]

    cluster.kubectl("delete", "pod", "-n", "vglobal", holder, "--wait=false")
    # The standby holds the Lease within --lease-duration (15 s) plus a renew period.
    wait_for(
        lambda: cluster.lease_holder() == standby,
        60,
        f"{standby} to take the Lease",
        lambda: agent_logs(cluster),
    )

    done = kind.hub.wait_job("long-a", {"Completed", "Failed", "Aborted"}, timeout=240)
    assert done["phase"] == "Completed" and done["cluster"] == cluster.name
    after = cluster.pods("long-a")
    assert {p["metadata"]["uid"] for p in after} == uids, "the new active agent created duplicate pods"

    # The new active agent takes new work too.
    kind.apply("after-failover", job("after-failover", cluster.name, "sleep 1"))
    assert kind.hub.wait_job("after-failover", {"Completed", "Failed", "Aborted"})["phase"] == "Completed"
    rows = {c["name"]: c for c in kind.hub.get("clusters")}
    assert rows[cluster.name]["state"] == "Ready"
