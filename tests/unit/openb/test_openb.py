"""The openb experiment on a small slice of the trace: method, KPI and policies, end to end."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from vglobal.cli.sim_openb import openb
from vglobal.sim.openb import POLICIES, arrivals, load_nodes, load_pods, place, run_openb

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "openb"
NODES = load_nodes(FIXTURES / "nodes.csv")
PODS = load_pods(FIXTURES / "pods.csv")
CAPACITY = sum(n.allocatable["nvidia.com/gpu"] for n in NODES)


def test_arrivals_reach_the_target_and_depend_on_the_seed() -> None:
    a = arrivals(PODS, CAPACITY, 1.3, 42)
    demand = sum(p.gpu_demand for p in a)
    assert demand >= 1.3 * CAPACITY > demand - a[-1].gpu_demand  # stops at the first pod past the target
    assert [p.name for p in arrivals(PODS, CAPACITY, 1.3, 42)] == [p.name for p in a]
    assert [p.name for p in arrivals(PODS, CAPACITY, 1.3, 43)] != [p.name for p in a]


@pytest.mark.parametrize("policy", POLICIES)
def test_no_gpu_cpu_or_memory_is_overcommitted(policy: str) -> None:
    arrived = arrivals(PODS, CAPACITY, 1.3, 7)
    tasks, result = place(NODES, arrived, policy, 7)
    per_node: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    shared: dict[str, int] = defaultdict(int)
    for t, pod in zip(tasks, arrived, strict=True):
        node = result.binds.get(t.uid)
        if node is None:
            continue
        use = per_node[node]
        use["cpu"] += pod.cpu_milli
        use["memory"] += pod.memory_mib
        use["gpu"] += pod.gpu_demand
        if pod.num_gpu == 1 and pod.gpu_milli < 1000:
            shared[node] += 1
    by_name = {n.name: n for n in NODES}
    for node, use in per_node.items():
        alloc = by_name[node].allocatable
        assert use["cpu"] <= alloc["cpu"]
        assert use["memory"] * 2**20 <= alloc["memory"]
        assert use["gpu"] <= alloc["nvidia.com/gpu"]
    assert result.binds  # something was placed


def test_kpi_is_monotone_and_bounded_and_fgd_packs_better_than_random() -> None:
    results = {p: [run_openb(NODES, PODS, p, seed) for seed in (1, 2, 3)] for p in ("random", "fgd")}
    for runs in results.values():
        for r in runs:
            ratios = r["alloc_ratio"]
            assert isinstance(ratios, dict) and len(ratios) == 130
            values = [ratios[str(i)] for i in range(1, 131)]
            assert values == sorted(values) and values[0] >= 0 and values[-1] <= 100
            # read at the first pod past each percent: never above arrived demand (one 8-GPU pod over)
            slack = 8000 / CAPACITY * 100
            assert all(values[i - 1] <= i + slack for i in range(1, 131))

    def mean130(p: str) -> float:
        return sum(float(r["alloc_ratio"]["130"]) for r in results[p]) / 3  # type: ignore[index]

    assert mean130("fgd") > mean130("random")


def test_cli_prints_the_published_json_shape() -> None:
    out = CliRunner().invoke(
        openb,
        [
            "--nodes",
            str(FIXTURES / "nodes.csv"),
            "--pods",
            str(FIXTURES / "pods.csv"),
            "--policy",
            "bestfit",
            "--seed",
            "42",
            "--target",
            "1.1",
            "-o",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["policy"] == "bestfit" and doc["seed"] == 42
    assert sorted(doc["alloc_ratio"], key=int)[-1] == "110" and "100" in doc["alloc_ratio"]
