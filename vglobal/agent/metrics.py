"""The agent's Prometheus metrics, served on --metrics-listen (loopback unless told otherwise):
what each node and GPU holds, from the backend and the device table; pods bound; how long a
scheduling cycle takes; binds the cluster has not confirmed yet."""

from __future__ import annotations

import time
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from vglobal import metrics_http
from vglobal.agent.backends.base import Backend
from vglobal.model.quantity import unit_scale
from vglobal.scheduler.api import Grant
from vglobal.scheduler.devices.mig import MigConfig
from vglobal.scheduler.devices.table import DeviceTable

REGISTRY = CollectorRegistry()

NODE_ALLOCATABLE = Gauge(
    "vglobal_agent_node_allocatable",
    "What a node offers (cpu in cores, memory in bytes, GPUs and other resources in whole units)",
    ["node", "resource"],
    registry=REGISTRY,
)
NODE_ALLOCATED = Gauge(
    "vglobal_agent_node_allocated",
    "What the pods on a node hold of it (allocatable minus free), in the same units",
    ["node", "resource"],
    registry=REGISTRY,
)
GPU_MEMORY = Gauge(
    "vglobal_agent_gpu_memory_mib", "A GPU's memory (0: unknown)", ["node", "gpu", "model"], registry=REGISTRY
)
GPU_MEMORY_ALLOCATED = Gauge(
    "vglobal_agent_gpu_memory_allocated_mib",
    "GPU memory granted to tasks",
    ["node", "gpu"],
    registry=REGISTRY,
)
GPU_CORES_ALLOCATED = Gauge(
    "vglobal_agent_gpu_cores_allocated_percent",
    "GPU cores granted to tasks (100 = the whole GPU)",
    ["node", "gpu"],
    registry=REGISTRY,
)
GPU_TASKS = Gauge("vglobal_agent_gpu_tasks", "Tasks sharing a GPU", ["node", "gpu"], registry=REGISTRY)
PODS_BOUND = Counter("vglobal_agent_pods_bound", "Pods the scheduler bound to nodes", registry=REGISTRY)
# Volcano's name and unit for the time of one scheduling session (scheduling and binding).
CYCLE_MILLISECONDS = Histogram(
    "volcano_e2e_scheduling_latency_milliseconds",
    "One scheduling cycle of the agent: snapshot, session, binds",
    buckets=(1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
    registry=REGISTRY,
)
BINDS_WAITING = Gauge(
    "vglobal_agent_binds_waiting",
    "Pods bound that the cluster does not show on their node yet",
    registry=REGISTRY,
)

REFRESH = 1.0  # seconds between two refreshes of the node and GPU figures at most


def serve_metrics(listen: str) -> None:
    """``[HOST:]PORT``, 127.0.0.1 when no host is given; the caller checks the host is allowed."""
    metrics_http.serve(listen, REGISTRY)


def record_cycle(seconds: float, binds: int) -> None:
    CYCLE_MILLISECONDS.observe(seconds * 1000)
    PODS_BOUND.inc(binds)


class Observer:
    """Sets the node and GPU gauges from the backend, at most every REFRESH seconds (the main
    loop calls it each turn; it owns the backend, so the figures are read there)."""

    def __init__(self) -> None:
        self._next = 0.0
        self._series: set[tuple[Gauge, tuple[str, ...]]] = set()

    def observe(self, backend: Backend, grants: Mapping[str, tuple[str, tuple[Grant, ...]]]) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + REFRESH
        seen: set[tuple[Gauge, tuple[str, ...]]] = set()

        def put(gauge: Gauge, value: float, *labels: str) -> None:
            gauge.labels(*labels).set(value)
            seen.add((gauge, labels))

        specs = backend.nodes()
        free = backend.free()
        for spec in specs:
            left = free.get(spec.name)
            for r, v in spec.allocatable.items():
                scale = unit_scale(r)
                put(NODE_ALLOCATABLE, v / scale, spec.name, r)
                put(NODE_ALLOCATED, max(0, v - (left[r] if left is not None else v)) / scale, spec.name, r)
        table = DeviceTable(specs, MigConfig((), 1))
        row_of = {s.name: i for i, s in enumerate(specs)}
        for node, given in grants.values():
            if node in row_of:
                table.apply(row_of[node], given, +1)
        for row, spec in enumerate(specs):
            for dev in table.devices[row]:
                gpu = str(dev.index)
                put(GPU_MEMORY, dev.memory_mib, spec.name, gpu, dev.model)
                put(GPU_MEMORY_ALLOCATED, int(table.used_mem[row, dev.index]), spec.name, gpu)
                put(GPU_CORES_ALLOCATED, int(table.used_cores[row, dev.index]), spec.name, gpu)
                put(GPU_TASKS, int(table.used_num[row, dev.index]), spec.name, gpu)
        BINDS_WAITING.set(backend.binds_waiting())
        for gauge, labels in self._series - seen:  # a node or GPU that went away
            gauge.remove(*labels)
        self._series = seen
