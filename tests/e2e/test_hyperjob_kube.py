"""A HyperJob through the hub and two kube agents onto two emulated Kubernetes clusters (real
processes): one child per cluster, and every container of every pod the agents create carries the
framework environment (HyperJob name, child index, number of children, rank offset) as the
Kubernetes API holds it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import System, wait_for
from tests.e2e.test_kube_clusters import emulator, pods
from tests.kubeapi import EmulatorProcess

pytestmark = pytest.mark.e2e

CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: NAME}
spec:
  nodeGroups:
  - name: NAME-n
    count: 2
    allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
"""

# Two children of 3 pods of 6 cpus (two containers each): one child fits a 32-cpu cluster, two do not.
HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: llm}
spec:
  replicatedJobs:
  - name: trainer
    replicas: 2
    templateSpec:
      tasks:
      - name: worker
        replicas: 3
        template:
          spec:
            containers:
            - {name: main, image: x, resources: {requests: {cpu: "5"}}, env: [{name: KEEP, value: "1"}]}
            - {name: side, image: x, resources: {requests: {cpu: "1"}}}
"""

ENV = (
    "VGLOBAL_HYPERJOB_NAME",
    "VGLOBAL_HYPERJOB_CHILD_INDEX",
    "VGLOBAL_HYPERJOB_CHILDREN",
    "VGLOBAL_HYPERJOB_RANK_OFFSET",
)


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[dict[str, EmulatorProcess]]:
    started: dict[str, EmulatorProcess] = {}
    try:
        for name in ("kube-x", "kube-y"):
            started[name] = emulator(tmp_path, name, CLUSTER.replace("NAME", name))
        yield started
    finally:
        for e in started.values():
            e.stop()


def _env(pod: Any) -> dict[str, dict[str, str]]:
    """Per container, its environment as the API server holds it."""
    return {c.name: {e.name: e.value for e in c.env or []} for c in pod.spec.containers}


def test_each_childs_pods_carry_the_hyperjob_environment(
    system: System, clusters: dict[str, EmulatorProcess]
) -> None:
    system.start_hub()
    for i, emu in enumerate(clusters.values()):
        system.start_kube_agent(f"k{i}", emu.kubeconfig, "--lease-duration", "0")
    wait_for(
        lambda: (
            sorted(c["name"] for c in system.get_json("clusters") if c["state"] == "Ready")
            == ["kube-x", "kube-y"]
        ),
        60,
        "both kube clusters Ready",
        system,
    )
    (path := system.tmp / "llm.yaml").write_text(HYPERJOB)
    system.cli("apply", "-f", str(path))
    children = ["llm-trainer-0", "llm-trainer-1"]
    with system.client() as c:
        wait_for(
            lambda: all(c.get_job(n).phase == "Running" for n in children), 90, "both children run", system
        )
        placed = {n: c.get_job(n).cluster for n in children}
    assert sorted(placed.values()) == ["kube-x", "kube-y"]
    for index, child in enumerate(children):
        made = pods(clusters[placed[child]].kubeconfig, child, live=True)
        assert sorted(p.metadata.name for p in made) == [f"{child}-worker-{k}" for k in range(3)]
        for pod in made:
            env = _env(pod)
            want = {
                "VGLOBAL_HYPERJOB_NAME": "llm",
                "VGLOBAL_HYPERJOB_CHILD_INDEX": str(index),
                "VGLOBAL_HYPERJOB_CHILDREN": "2",
                "VGLOBAL_HYPERJOB_RANK_OFFSET": str(3 * index),  # the pods of the children before it
            }
            assert {k: env["main"][k] for k in ENV} == want and env["main"]["KEEP"] == "1"
            assert {k: env["side"][k] for k in ENV} == want
        # The other cluster has none of this child's pods.
        other = next(e for n, e in clusters.items() if n != placed[child])
        assert pods(other.kubeconfig, child) == []
