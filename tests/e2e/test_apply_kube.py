"""`vglobal scale` on the kube backend: a Deployment running in an emulated Kubernetes cluster
(tests/kubeapi, its own process) is scaled in place: the agent patches the object's replicas, its
controller makes the new pods and the agent binds them; scaled down, the extra pods go."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import System, wait_for
from tests.e2e.test_kube_workloads import DEPLOYMENT, emulator, run_pods, workload
from tests.kubeapi import EmulatorProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmulatorProcess]:
    emu = emulator(tmp_path, "kube-a")
    try:
        yield emu
    finally:
        emu.stop()


def bound(kubeconfig: Path, uid: str) -> int:
    return sum(1 for p in run_pods(kubeconfig, uid) if p.spec.node_name)


def test_scale_patches_the_deployment_in_its_cluster(system: System, cluster: EmulatorProcess) -> None:
    system.start_hub()
    system.start_kube_agent("kube-a", cluster.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "agent registered", system)
    system.apply_text("deploy", DEPLOYMENT)
    with system.client() as c:
        wait_for(lambda: c.get_job("nginx-deployment").phase == "Running", 60, "deployment running", system)
        uid = c.get_job("nginx-deployment").uid
    kc = cluster.kubeconfig
    wait_for(lambda: bound(kc, uid) == 3, 60, "3 pods bound", system)

    out = system.cli("scale", "deployment/nginx-deployment", "--replicas", "5").stdout
    assert "deployment.apps/default/nginx-deployment scaled" in out, out
    wait_for(lambda: (workload(kc, "Deployment", "nginx-deployment") or {}).get("spec", {}).get("replicas") == 5,
             60, "the object's replicas patched", system)  # fmt: skip
    wait_for(lambda: bound(kc, uid) == 5, 60, "5 pods bound", system)
    with system.client() as c:
        wait_for(lambda: c.get_job("nginx-deployment").observed_generation == 2, 30, "observed 2", system)

    system.cli("scale", "deployment/nginx-deployment", "--replicas", "3")
    wait_for(lambda: len(run_pods(kc, uid)) == 3, 60, "back to 3 pods", system)
    with system.client() as c:
        assert c.get_job("nginx-deployment").uid == uid
