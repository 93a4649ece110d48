"""Placement through a hub and three simulated agents on the real clock, with the hub's placement
file: CPU-only work goes to the CPU cluster, GPU work to on-premises first and spills to the tainted
cloud (an away run); a gang bigger than the cloud's nodes is admitted there and runs once its pool
grows; a higher-priority job that needs the cloud's room takes the away run's place, not the newer
one at home there."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e


def _cluster(name: str, allocatable: str, autoscale: str = "") -> str:
    return (
        f"apiVersion: vglobal.io/v1alpha1\nkind: SimCluster\nmetadata: {{name: {name}}}\nspec:\n"
        f"  nodeGroups:\n  - {{name: n, count: 1, allocatable: {allocatable}{autoscale}}}\n"
    )


GPU = '{cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}'
CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def _job(name: str, request: str, pods: int = 1, priority: str = "low", annotations: str = "{}") -> str:
    return (
        f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, annotations: {annotations}}}\n"
        f"spec:\n  priorityClassName: {priority}\n  minAvailable: {pods}\n  tasks:\n  - name: w\n"
        f"    replicas: {pods}\n    template:\n      spec: {{containers: [{{name: w, image: x, "
        f"resources: {{requests: {request}}}}}]}}\n"
    )


CLOUD_ONLY = "{vglobal.io/clusters: cloud, vglobal.io/tolerations: burst}"


def _running(system: System, *names: str) -> dict[str, dict[str, Any]]:
    def all_running() -> dict[str, dict[str, Any]] | None:
        jobs = {j["name"]: j for j in system.get_json("jobs")}
        ok = all(jobs.get(n, {}).get("phase") == "Running" for n in names)
        return {n: jobs[n] for n in names} if ok else None

    return wait_for(all_running, 60, f"{', '.join(names)} running", system)


def _reasons(system: System, job: str) -> list[tuple[str, str]]:
    with system.client() as c:
        return [(e.reason, e.message) for e in c.explain_job(job).events]


def test_on_prem_first_spill_to_the_growing_cloud_and_away_runs_preempted_first(system: System) -> None:
    placement = system.tmp / "placement.yaml"
    placement.write_text("taints:\n  cloud: [burst=true:PreferNoSchedule]\n")
    system.start_hub("--placement-config", str(placement))
    system.start_agent("on-prem-a", _cluster("on-prem-a", GPU))
    system.start_agent("on-prem-b", _cluster("on-prem-b", '{cpu: "16", memory: 64Gi}'))
    system.start_agent("cloud", _cluster("cloud", GPU, ", autoscale: {max: 3, provisionDelay: 2s}"))
    wait_for(lambda: len(system.get_json("clusters")) == 3, 60, "three clusters registered", system)
    gpu8 = '{cpu: "4", nvidia.com/gpu: "8"}'
    system.apply_text(
        "first",
        "---\n".join(
            (CLASSES, _job("etl", '{cpu: "8"}'), _job("train-1", gpu8), _job("train-2", gpu8))
        ),
    )
    first = _running(system, "etl", "train-1", "train-2")
    # CPU-only work on the CPU cluster (binpack alone picks on-prem-a, first by name); GPU work on
    # premises, the second spills to the cloud, away
    assert first["etl"]["cluster"] == "on-prem-b"
    assert sorted(j["cluster"] for n, j in first.items() if n != "etl") == ["cloud", "on-prem-a"]
    away = next(n for n in ("train-1", "train-2") if first[n]["cluster"] == "cloud")
    assert ("Away", "runs away from where it prefers: cluster cloud is tainted burst=true:PreferNoSchedule") in (
        _reasons(system, away)
    )
    # a gang of 2 where the cloud has 1 node, taken: admitted there, the pool grows by 2, it runs
    system.apply_text("pretrain", _job("pretrain", gpu8, pods=2, annotations=CLOUD_ONLY))
    assert _running(system, "pretrain")["pretrain"]["cluster"] == "cloud"
    assert ("Provisioning", "its gang needs 2 nodes of node pool n that cluster cloud can add") in (
        _reasons(system, "pretrain")
    )
    # the pool is at its maximum: a higher-priority job needing the cloud takes the away run's place
    system.apply_text("urgent", _job("urgent", gpu8, priority="high", annotations=CLOUD_ONLY))
    assert _running(system, "urgent")["urgent"]["cluster"] == "cloud"
    assert [r for r, _ in _reasons(system, away) if r == "Preempted"] == ["Preempted"]
    assert not [r for r, _ in _reasons(system, "pretrain") if r == "Preempted"]
    # describe says why the running job landed where it did
    described = system.cli("describe", "job", "urgent").stdout
    assert "placement verdict at admission: cloud: score 1.00, tried 1st" in described, described
