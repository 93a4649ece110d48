"""The FGD experiment on the Alibaba GPU-sharing trace (openb), through our scheduler.

Method (``../shared/data/README.md``): the cluster is the trace's GPU nodes; pods are drawn from the
pod list with replacement, in an order fixed by the seed, until the arrived GPU request reaches
``target`` x the cluster's GPU capacity; pods arrive one at a time and never leave; a pod that does
not fit fails. KPI: allocated GPU-milli / total GPU-milli, read at each percent of arrived demand.

Every pod becomes a one-task job created in arrival order, and ONE allocate session places them:
allocate takes jobs oldest first and commits each before the next, so each pod sees every earlier
placement — one at a time, through the same plugins the agents run. A GPU-sharing pod
(``gpu_milli < 1000``) asks one vGPU with ``volcano.sh/vgpu-cores = gpu_milli / 10`` and as much
vGPU memory (each GPU is given 1000 MiB of vGPU memory: the trace has no GPU memory, so memory and
compute shares are the same number); a pod with whole GPUs asks ``nvidia.com/gpu``; ``gpu_spec``
becomes the ``nvidia.com/use-gputype`` annotation.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    ClusterSnapshot,
    CycleResult,
    JobSpec,
    NodeSpec,
    QueueSpec,
    TaskSpec,
    parse_conf,
    run_cycle,
)
from vglobal.scheduler.devices import GPUS_EXTENSION, GpuDevice, vgpu_capacity

POLICIES = ("random", "bestfit", "binpack", "spread", "fgd")
VGPU_MEMORY_MIB = 1000  # per GPU: vGPU memory in "milli-GPU" units (see the module docstring)
SPLIT = 100  # vGPU tasks per GPU: the trace shares a GPU among as many pods as fit
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class TracePod:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: str

    @property
    def gpu_demand(self) -> int:
        """GPU-milli this pod asks for."""
        if self.num_gpu == 0:
            return 0
        return self.gpu_milli if self.num_gpu == 1 else self.num_gpu * 1000


def load_nodes(path: Path) -> tuple[NodeSpec, ...]:
    out = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            count = int(row["gpu"])
            devices = tuple(GpuDevice(i, VGPU_MEMORY_MIB, row["model"], split=SPLIT) for i in range(count))
            alloc = ResourceVector(
                {
                    "cpu": int(row["cpu_milli"]),
                    "memory": int(row["memory_mib"]) * MIB,
                    "pods": 100_000,
                    "nvidia.com/gpu": count * 1000,
                    **vgpu_capacity(devices),
                }
            )
            out.append(NodeSpec(row["sn"], alloc, extensions={GPUS_EXTENSION: devices}))
    return tuple(out)


def load_pods(path: Path) -> tuple[TracePod, ...]:
    with path.open(newline="") as f:
        return tuple(
            TracePod(
                r["name"],
                int(r["cpu_milli"]),
                int(r["memory_mib"]),
                int(r["num_gpu"]),
                int(r["gpu_milli"]),
                r.get("gpu_spec") or "",
            )
            for r in csv.DictReader(f)
        )


def arrivals(pods: Sequence[TracePod], capacity: int, target: float, seed: int) -> list[TracePod]:
    """Pods drawn with replacement in the seed's order until arrived GPU demand >= target x capacity."""
    rng = np.random.default_rng(seed)
    goal = target * capacity
    out: list[TracePod] = []
    arrived = 0
    while arrived < goal:
        for i in rng.integers(0, len(pods), size=1024).tolist():
            pod = pods[i]
            out.append(pod)
            arrived += pod.gpu_demand
            if arrived >= goal:
                break
    return out


def _task_spec(i: int, pod: TracePod) -> TaskSpec:
    request: dict[str, int] = {"cpu": pod.cpu_milli, "memory": pod.memory_mib * MIB}
    if pod.num_gpu == 1 and pod.gpu_milli < 1000:
        request["volcano.sh/vgpu-number"] = 1000
        request["volcano.sh/vgpu-cores"] = pod.gpu_milli // 10 * 1000
        request["volcano.sh/vgpu-memory"] = pod.gpu_milli * 1000
    elif pod.num_gpu:
        request["nvidia.com/gpu"] = pod.num_gpu * 1000
    annotations = {"nvidia.com/use-gputype": pod.gpu_spec} if pod.gpu_spec else {}
    uid = f"p{i:06d}"
    return TaskSpec(
        uid=uid,
        name=f"{uid}-{pod.name}-0",
        job_uid=uid,
        role="pod",
        index=0,
        request=ResourceVector(request),
        annotations=annotations,
    )


def policy_conf(policy: str) -> str:
    """The scheduler conf of each policy: deviceshare scores GPUs; binpack / spread add node scores."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; one of {', '.join(POLICIES)}")
    extra = ""
    if policy == "binpack":
        extra = """
  - name: binpack
    arguments: {binpack.weight: 1, binpack.resources: "nvidia.com/gpu,volcano.sh/vgpu-cores"}"""
    elif policy == "spread":
        extra = """
  - name: nodeorder
    arguments: {leastrequested.weight: 1, balancedresource.weight: 0, nodeaffinity.weight: 0,
                tainttoleration.weight: 0}"""
    return f"""
actions: "allocate"
configurations:
- name: allocate
  arguments: {{percentageOfNodesToFind: 100}}
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins:
  - name: predicates
  - name: deviceshare
    arguments: {{deviceshare.SchedulePolicy: {policy}, deviceshare.ScheduleWeight: 1}}{extra}
"""


def place(
    nodes: Sequence[NodeSpec], arrived: Sequence[TracePod], policy: str, seed: int
) -> tuple[list[TaskSpec], CycleResult]:
    """One allocate session over all arrived pods (oldest first): the tasks and the binds."""
    tasks = [_task_spec(i, p) for i, p in enumerate(arrived)]
    jobs = tuple(
        JobSpec(t.uid, t.uid, "default", "default", 0, 1, {"pod": 1}, i, (t,), podgroup_phase="Inqueue")
        for i, t in enumerate(tasks)
    )
    state = ClusterSnapshot(tuple(nodes), jobs, (QueueSpec("default"),))
    # random is seeded through the conf so the scheduler stays a pure function of its input
    text = policy_conf(policy).replace("ScheduleWeight: 1}", f"ScheduleWeight: 1, deviceshare.Seed: {seed}}}")
    return tasks, run_cycle(state, parse_conf(text))


def run_openb(
    nodes: Sequence[NodeSpec],
    pods: Sequence[TracePod],
    policy: str,
    seed: int,
    target: float = 1.3,
    memory: bool = True,
) -> dict[str, object]:
    """``memory=False`` drops the pods' memory requests, as the FGD paper's simulator (which tracks
    only cpu and GPU) does; the published numbers were made that way."""
    if not memory:
        pods = [replace(p, memory_mib=0) for p in pods]
    capacity = sum(n.allocatable["nvidia.com/gpu"] for n in nodes)
    arrived = arrivals(pods, capacity, target, seed)
    tasks, result = place(nodes, arrived, policy, seed)
    demand = np.array([p.gpu_demand for p in arrived], dtype=np.int64)
    placed = np.array([t.uid in result.binds for t in tasks], dtype=np.bool_)
    arrived_cum = np.cumsum(demand)
    alloc_cum = np.cumsum(np.where(placed, demand, 0))
    ratios: dict[str, float] = {}
    for pct in range(1, round(target * 100) + 1):
        at = int(np.searchsorted(arrived_cum, pct / 100 * capacity))
        at = min(at, len(arrived) - 1)
        ratios[str(pct)] = round(float(alloc_cum[at]) / capacity * 100, 2)
    return {
        "policy": policy,
        "seed": seed,
        "memory": memory,
        "pods": len(arrived),
        "failed": int((~placed).sum()),
        "alloc_ratio": ratios,
    }


def run_openb_files(
    nodes_csv: Path, pods_csv: Path, policy: str, seed: int, target: float = 1.3, memory: bool = True
) -> dict[str, object]:
    return run_openb(load_nodes(nodes_csv), load_pods(pods_csv), policy, seed, target, memory)
