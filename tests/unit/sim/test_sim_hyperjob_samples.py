"""Volcano Global's own HyperJob examples (tests/fixtures/hyperjobs, as volcano-sh/volcano-global
ships them in docs/deploy/example/hyperjob, v0.3) replayed by `vglobal sim run`: children named as
its controller names them, one per cluster, within their clusterNames, every pod placed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vglobal.sim.run import run_simulation

SAMPLES = Path(__file__).parents[2] / "fixtures" / "hyperjobs"


def _cluster(tmp: Path, name: str, nodes: int, device: str, label: str = "") -> Path:
    """``nodes`` nodes of 8 ``device`` each (labelled hardware-type=``label`` when given)."""
    group: dict[str, Any] = {
        "name": f"{name}-n",
        "count": nodes,
        "allocatable": {"cpu": "96", "memory": "512Gi", "pods": "110", device: "8"},
    }
    if label:
        group["labels"] = {"hardware-type": label}
    doc = {"apiVersion": "vglobal.io/v1alpha1", "kind": "SimCluster", "metadata": {"name": name}}
    (path := tmp / f"{name}.yaml").write_text(json.dumps({**doc, "spec": {"nodeGroups": [group]}}))
    return path


def _run(clusters: list[Path], sample: str) -> dict[str, tuple[str, str, int]]:
    result = run_simulation(cluster_files=clusters, jobs_path=SAMPLES / sample)
    return {j["name"]: (j["cluster"], j["phase"], len(j["pods"])) for j in result["jobs"]}


def test_llm_training_runs_its_two_128_gpu_children_on_two_clusters(tmp_path: Path) -> None:
    clusters = [_cluster(tmp_path, n, 16, "nvidia.com/gpu") for n in ("east", "west")]
    got = _run(clusters, "llm-training.yaml")
    assert sorted(got) == ["llm-training-trainer-0", "llm-training-trainer-1"]
    assert sorted(c for c, _, _ in got.values()) == ["east", "west"]
    assert {(phase, pods) for _, phase, pods in got.values()} == {("Running", 128)}


def test_heterogeneous_training_puts_each_child_on_its_own_hardware(tmp_path: Path) -> None:
    clusters = [
        _cluster(tmp_path, "cluster-ascend-910b-1", 8, "huawei.com/ascend910b", "Ascend910B"),
        _cluster(tmp_path, "cluster-ascend-910c-1", 8, "huawei.com/ascend910c", "Ascend910C"),
        _cluster(tmp_path, "cluster-gpu", 8, "nvidia.com/gpu"),
    ]
    got = _run(clusters, "heterogeneous-training.yaml")
    assert got == {
        "llm-heterogeneous-trainer-910b-0": ("cluster-ascend-910b-1", "Running", 64),
        "llm-heterogeneous-trainer-910c-0": ("cluster-ascend-910c-1", "Running", 64),
    }


def test_cluster_affinity_training_keeps_to_its_three_clusters_one_child_each(tmp_path: Path) -> None:
    names = ("cluster-gpu-west-1", "cluster-gpu-east-1", "cluster-gpu-central-1")
    # "cluster-big" is emptier and bigger, but not among the clusterNames.
    clusters = [_cluster(tmp_path, n, 4, "nvidia.com/gpu") for n in names]
    clusters.append(_cluster(tmp_path, "cluster-big", 16, "nvidia.com/gpu"))
    got = _run(clusters, "cluster-affinity-training.yaml")
    assert sorted(got) == [f"resilient-training-trainer-{i}" for i in range(3)]
    assert sorted(c for c, _, _ in got.values()) == sorted(names)
    assert {(phase, pods) for _, phase, pods in got.values()} == {("Running", 32)}
