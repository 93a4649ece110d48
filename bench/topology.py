"""Topology benchmark on the Alibaba Lingjun network layout (847 hosts, 48 ToR switches).

Tiers: ToR (ASW) = 1, aggregation (PSW) = 2, core (DSW) = 3. Every host has 8 GPUs; gangs of
2-GPU pods (2 to 32 pods, a fixed mix) fill about 80% of the GPUs. One scheduling session places
them with the default agent conf, once with ``networkTopology: soft`` on every gang (prefer one
ToR, degrade upwards) and once without topology. Prints the share of gangs inside one ToR, the mean
tier of each gang's lowest common HyperNode, pods placed and pods/s. Run from the repository root:

    .venv/bin/python bench/topology.py
"""

from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    DEFAULT_AGENT_CONF,
    ClusterSnapshot,
    JobSpec,
    NodeSpec,
    QueueSpec,
    TaskSpec,
    run_cycle,
)
from vglobal.scheduler.topology import HyperNodeTree
from vglobal.sim.traces import TraceMissing, need

TOPO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "topology" / "crux_topo.csv"
GI = 1024**3
SIZES = (2, 4, 8, 16, 32, 4, 8, 2)  # pods per gang, cycled


def load() -> tuple[tuple[NodeSpec, ...], tuple[ResolvedHyperNode, ...]]:
    with TOPO.open(newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: (r["DSW"], r["PSW"], r["ASW"], r["ip"]))
    nodes = []
    asw: dict[str, set[str]] = {}
    psw: dict[str, set[str]] = {}
    dsw: dict[str, set[str]] = {}
    parent: dict[str, str] = {}
    for i, r in enumerate(rows):
        name = f"host-{i:04d}"
        nodes.append(
            NodeSpec(
                name, ResourceVector({"cpu": 96_000, "memory": 768 * GI, "pods": 110, "nvidia.com/gpu": 8000})
            )
        )
        a, p, d = f"asw-{r['ASW']}", f"psw-{r['PSW']}", f"dsw-{r['DSW']}"
        asw.setdefault(a, set()).add(name)
        psw.setdefault(p, set()).add(name)
        dsw.setdefault(d, set()).add(name)
        parent[a], parent[p] = p, d
    hns = [ResolvedHyperNode(a, 1, "asw", parent[a], (), frozenset(s)) for a, s in asw.items()]
    hns += [
        ResolvedHyperNode(
            p, 2, "psw", parent[p], tuple(sorted(a for a in asw if parent[a] == p)), frozenset(s)
        )
        for p, s in psw.items()
    ]
    hns += [
        ResolvedHyperNode(d, 3, "dsw", None, tuple(sorted(p for p in psw if parent[p] == d)), frozenset(s))
        for d, s in dsw.items()
    ]
    return tuple(nodes), tuple(hns)


def gangs(total_gpus: int, topology: tuple[str, int] | None) -> tuple[JobSpec, ...]:
    jobs = []
    used = 0
    i = 0
    while used + 2000 * SIZES[i % len(SIZES)] <= 0.8 * total_gpus:
        size = SIZES[i % len(SIZES)]
        uid = f"g{i:04d}"
        tasks = tuple(
            TaskSpec(
                uid=f"{uid}-{k}",
                name=f"{uid}-w-{k}",
                job_uid=uid,
                role="w",
                index=k,
                request=ResourceVector({"cpu": 8000, "memory": 64 * GI, "nvidia.com/gpu": 2000}),
            )
            for k in range(size)
        )
        jobs.append(
            JobSpec(
                uid,
                uid,
                "default",
                "default",
                0,
                size,
                {"w": size},
                i,
                tasks,
                "Inqueue",
                network_topology=topology,
            )
        )
        used += 2000 * size
        i += 1
    return tuple(jobs)


def measure(
    nodes: tuple[NodeSpec, ...], hns: tuple[ResolvedHyperNode, ...], topology: tuple[str, int] | None
) -> dict[str, float]:
    jobs = gangs(sum(n.allocatable["nvidia.com/gpu"] for n in nodes), topology)
    state = ClusterSnapshot(nodes, jobs, (QueueSpec("default"),), hns)
    start = time.perf_counter()
    result = run_cycle(state, DEFAULT_AGENT_CONF)
    took = time.perf_counter() - start
    tree = HyperNodeTree(hns, {n.name: i for i, n in enumerate(sorted(nodes, key=lambda n: n.name))})
    row = {n.name: i for i, n in enumerate(sorted(nodes, key=lambda n: n.name))}
    placed = [j for j in jobs if all(t.uid in result.binds for t in j.tasks)]
    tiers = []
    one_tor = 0
    for j in placed:
        lca = tree.lca_of_rows([row[result.binds[t.uid]] for t in j.tasks])
        assert lca is not None
        tiers.append(tree.tier[lca])
        one_tor += tree.tier[lca] <= 1
    pods = sum(len(j.tasks) for j in placed)
    return {
        "gangs": len(jobs),
        "placed": len(placed),
        "one_tor": one_tor / max(len(placed), 1),
        "mean_tier": sum(tiers) / max(len(tiers), 1),
        "pods": pods,
        "pods_per_s": pods / took,
        "seconds": took,
    }


def main() -> None:
    try:
        need(TOPO, "topology")
    except TraceMissing as exc:
        sys.exit(f"bench/topology.py: {exc}")
    nodes, hns = load()
    print("command: .venv/bin/python bench/topology.py")
    print(
        f"{len(nodes)} hosts x 8 GPUs, {sum(h.tier == 1 for h in hns)} ToRs, {sum(h.tier == 2 for h in hns)} aggregation"
    )
    print("\n| run | gangs placed | within one ToR | mean LCA tier | pods placed | pods/s |")
    print("|---|---|---|---|---|---|")
    for label, topo in (
        ("topology-aware (soft)", ("soft", 1)),
        ("topology-aware (hard, tier 2)", ("hard", 2)),
        ("unaware", None),
    ):
        m = measure(nodes, hns, topo)
        print(
            f"| {label} | {m['placed']:.0f}/{m['gangs']:.0f} | {100 * m['one_tor']:.1f}% | {m['mean_tier']:.2f} "
            f"| {m['pods']:.0f} | {m['pods_per_s']:.0f} |"
        )


if __name__ == "__main__":
    main()
