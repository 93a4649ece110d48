"""RestartPartition through hub, kube agent and an emulated cluster (real processes): when one pod of
a partition fails, only that partition's pods are deleted and made anew; the other partitions' pods
keep running, the same pods (same uids), on the same run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import System, wait_for
from tests.e2e.test_kube_clusters import KUBE_A, emulator, pods
from tests.kubeapi import EmulatorProcess

pytestmark = pytest.mark.e2e

# 3 partitions of 2 pods, each inside one ToR; no duration: the pods run until the test is done.
JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  maxRetry: 3
  policies: [{exitCode: 3, action: RestartPartition}]
  tasks:
  - name: worker
    replicas: 6
    partitionPolicy:
      totalPartitions: 3
      partitionSize: 2
      networkTopology: {mode: hard, highestTierAllowed: 1}
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: x, resources: {requests: {cpu: "8"}}}]
"""


@pytest.fixture
def kube_a(tmp_path: Path) -> Iterator[EmulatorProcess]:
    started = emulator(tmp_path, "kube-a", KUBE_A)
    try:
        yield started
    finally:
        started.stop()


def _running(kubeconfig: Path) -> dict[str, tuple[str, str]]:
    """pod name -> (uid, node) of the job's live Running pods."""
    return {
        p.metadata.name: (p.metadata.uid, p.spec.node_name)
        for p in pods(kubeconfig, "train", live=True)
        if p.status.phase == "Running"
    }


def test_a_failed_pod_restarts_only_its_partition(system: System, kube_a: EmulatorProcess) -> None:
    system.start_hub()
    system.start_kube_agent("a", kube_a.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: [c["name"] for c in system.get_json("clusters")] == ["kube-a"], 60, "kube-a", system)
    (path := system.tmp / "train.yaml").write_text(JOB)
    system.cli("apply", "-f", str(path))
    before = wait_for(
        lambda: len(got := _running(kube_a.kubeconfig)) == 6 and got, 60, "the 6 pods running", system
    )
    labels = {
        p.metadata.name: p.metadata.labels["volcano.sh/partition-id"]
        for p in pods(kube_a.kubeconfig, "train")
    }
    assert labels == {f"train-worker-{i}": str(i // 2) for i in range(6)}
    for part in range(3):  # each partition inside one ToR (a100-r0-* or a100-r1-*)
        racks = {before[f"train-worker-{i}"][1].rsplit("-", 1)[0] for i in (2 * part, 2 * part + 1)}
        assert len(racks) == 1, before

    kube_a.kill_container("default", "train-worker-3", code=3)

    def restarted() -> dict[str, tuple[str, str]] | None:
        now = _running(kube_a.kubeconfig)
        new = {n for n in before if n in now and now[n][0] != before[n][0]}
        return now if len(now) == 6 and new == {"train-worker-2", "train-worker-3"} else None

    after = wait_for(restarted, 60, "partition 1 made anew and running", system)
    assert {n: after[n][0] for n in after if n not in ("train-worker-2", "train-worker-3")} == {
        n: before[n][0] for n in before if n not in ("train-worker-2", "train-worker-3")
    }
    with system.client() as c:
        job = c.get_job("train")
        assert job.cluster == "kube-a" and job.generation == 1  # restarted in place, never moved
        assert job.retry_count == 1
        events = [(e.source, e.reason) for e in c.explain_job("train").events]
    assert ("agent/kube-a", "RestartPartition") in events, events
