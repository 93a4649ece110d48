"""KubeRay's RayJob sample, which ships its script in a ConfigMap, applies unchanged and runs on a
simulated cluster: the ConfigMap first, then the RayJob that mounts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).parents[1] / "fixtures" / "workloads" / "ray-job.sample.yaml"


def test_kuberays_rayjob_sample_with_its_configmap_applies_unchanged_and_runs(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=2, gpus=0))
    sdk = system.client()
    wait_for(lambda: len(sdk.list_clusters()) == 1, 60, "the cluster registered", system)
    out = system.cli("apply", "-f", str(SAMPLE)).stdout.splitlines()
    assert out == ["configmap/default/ray-job-code-sample created", "rayjob.ray.io/default/rayjob-sample created"]
    wait_for(lambda: sdk.get_job("rayjob-sample").phase == "Running", 60, "the RayJob running", system)
    shown = system.get_json("configmaps")
    assert [(c["name"], c["data"]) for c in shown] == [("ray-job-code-sample", 1)]
    assert "rayjob-sample" in system.cli("describe", "cm", "ray-job-code-sample").stdout
    again = system.cli("apply", "-f", str(SAMPLE)).stdout.splitlines()
    assert again[0] == "configmap/default/ray-job-code-sample unchanged"
    sdk.close()
