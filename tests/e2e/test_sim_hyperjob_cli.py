"""`vglobal sim run` replaying HyperJobs from YAML, run as the console script a user runs: children
start together one per cluster, a HyperJob that cannot start whole waits whole with its reason, and
an auto split divides the accelerators over the simulated clusters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli_run import vglobal
from tests.unit.sim.test_sim_hyperjob import AUTO  # splitPolicy auto, accelerators %d, 8 GPUs a pod
from tests.unit.sim.test_sim_hyperjob import HYPERJOB as STATIC  # 3 children of 4 8-GPU pods, 10m

pytestmark = pytest.mark.e2e

CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: %(name)s}
spec:
  nodeGroups:
  - name: %(name)s
    count: %(nodes)d
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
"""


def _clusters(tmp: Path, **nodes: int) -> list[str]:
    args = []
    for name, count in nodes.items():
        path = tmp / f"{name}.yaml"
        path.write_text(CLUSTER % {"name": name, "nodes": count})
        args += ["--cluster", str(path)]
    return args


def _sim(tmp: Path, jobs: str, **nodes: int) -> dict[str, Any]:
    (path := tmp / "jobs.yaml").write_text(jobs)
    res = vglobal("sim", "run", *_clusters(tmp, **nodes), "--jobs", str(path), timeout=120)
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _jobs(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in result["jobs"]}


def test_three_children_start_together_one_per_cluster_and_complete(tmp_path: Path) -> None:
    got = _jobs(_sim(tmp_path, STATIC, c1=4, c2=4, c3=4))
    assert sorted(got) == ["llm-trainer-0", "llm-trainer-1", "llm-trainer-2"]
    assert sorted(j["cluster"] for j in got.values()) == ["c1", "c2", "c3"]
    assert {(j["admittedAt"], j["phase"]) for j in got.values()} == {(0.0, "Completed")}


def test_a_hyperjob_that_cannot_start_whole_waits_whole_naming_the_child(tmp_path: Path) -> None:
    got = _jobs(_sim(tmp_path, STATIC, c1=4, c2=4))  # room for two of the three children
    assert {(j["phase"], j["cluster"]) for j in got.values()} == {("Pending", None)}
    reason = got["llm-trainer-0"]["reason"]
    assert reason.startswith(
        "HyperJob default/llm waits whole (3 children must start together): child llm-trainer-2 "
    )
    assert "beside them, best: c1 can hold 0 of the 4 pods" in reason and "its siblings hold c1, c2" in reason


def test_auto_split_divides_80_gpus_as_32_32_16(tmp_path: Path) -> None:
    got = _jobs(_sim(tmp_path, AUTO % 80, a=4, b=4, c=2))
    shares = sorted((j["cluster"], len(j["pods"]) * 8) for j in got.values())
    assert shares == [("a", 32), ("b", 32), ("c", 16)]
    assert {j["admittedAt"] for j in got.values()} == {0.0}


def test_an_auto_split_no_cluster_set_holds_is_refused_naming_the_field(tmp_path: Path) -> None:
    (path := tmp_path / "jobs.yaml").write_text(AUTO % 96)
    res = vglobal("sim", "run", *_clusters(tmp_path, a=4, b=4), "--jobs", str(path))
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "HyperJob default/auto: spec.replicatedJobs[0].splitPolicy.accelerators" in res.stderr
