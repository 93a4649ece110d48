"""Small builders for topology scenarios: nodes behind switches, gangs with networkTopology."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    ClusterSnapshot,
    CycleResult,
    JobSpec,
    NodeSpec,
    QueueSpec,
    TaskSpec,
    TaskStatus,
    parse_conf,
    run_cycle,
)

CONF = """
actions: "allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: binpack}, {name: network-topology-aware}]
"""


def nodes(count: int, cpu: str = "2", gpus: int = 0) -> tuple[NodeSpec, ...]:
    alloc: dict[str, str | int] = {"cpu": cpu, "memory": "8Gi", "pods": 110}
    if gpus:
        alloc["nvidia.com/gpu"] = gpus
    return tuple(NodeSpec(f"n{i}", ResourceVector.from_quantities(alloc)) for i in range(count))


def switches(per_switch: int, count: int, spines: int = 1) -> tuple[ResolvedHyperNode, ...]:
    """``count`` tier-1 switches of ``per_switch`` nodes (n0, n1, ...), evenly under tier-2 spines."""
    out = []
    per_spine = count // spines
    for s in range(count):
        members = frozenset(f"n{s * per_switch + i}" for i in range(per_switch))
        out.append(ResolvedHyperNode(f"s{s}", 1, "tor", parent=f"spine{s // per_spine}", nodes=members))
    for p in range(spines):
        kids = [h for h in out if h.parent == f"spine{p}"]
        out.append(
            ResolvedHyperNode(
                f"spine{p}",
                2,
                "spine",
                children=tuple(h.name for h in kids),
                nodes=frozenset().union(*(h.nodes for h in kids)),
            )
        )
    return tuple(out)


def gang(
    name: str,
    size: int,
    cpu: str = "2",
    topology: tuple[str, int] | None = None,
    placed: Mapping[int, str] | None = None,
    creation: int = 0,
    extra: Mapping[str, str | int] | None = None,
) -> JobSpec:
    tasks = []
    for i in range(size):
        node = (placed or {}).get(i)
        tasks.append(
            TaskSpec(
                uid=f"{name}-{i}",
                name=f"{name}-w-{i}",
                job_uid=name,
                role="w",
                index=i,
                request=ResourceVector.from_quantities({"cpu": cpu, "memory": "1Gi", **(extra or {})}),
                status=TaskStatus.Running if node else TaskStatus.Pending,
                node=node,
            )
        )
    return JobSpec(
        uid=name,
        name=name,
        namespace="default",
        queue="default",
        priority=0,
        min_available=size,
        task_min_available={"w": size},
        creation=creation,
        tasks=tuple(tasks),
        podgroup_phase="Inqueue",
        network_topology=topology,
    )


def run(
    node_specs: Sequence[NodeSpec],
    jobs: Sequence[JobSpec],
    hyper_nodes: Sequence[ResolvedHyperNode],
    conf: str = CONF,
) -> CycleResult:
    state = ClusterSnapshot(tuple(node_specs), tuple(jobs), (QueueSpec("default"),), tuple(hyper_nodes))
    return run_cycle(state, parse_conf(conf))


def switch_of(hyper_nodes: Sequence[ResolvedHyperNode], node: str, tier: int = 1) -> str:
    return next(h.name for h in hyper_nodes if h.tier == tier and node in h.nodes)
