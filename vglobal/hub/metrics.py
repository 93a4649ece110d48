"""Prometheus metrics, served on --metrics-listen in the text format."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from vglobal import metrics_http
from vglobal.model.quantity import unit_scale

REGISTRY = CollectorRegistry()
# The unit of every gauge labelled by resource: each resource's own, as Kubernetes counts it.
UNITS = "(cpu in cores, memory in bytes, GPUs and other resources in whole units)"

ADMISSIONS = Counter(
    "vglobal_admissions_total", "Jobs admitted to a cluster", ["queue", "cluster"], registry=REGISTRY
)
RECLAIMS = Counter(
    "vglobal_reclaims_total", "Running jobs stopped and re-queued to give back capacity", registry=REGISTRY
)
CYCLE_SECONDS = Histogram(
    "vglobal_dispatch_cycle_seconds",
    "Duration of one dispatch cycle: snapshot, admit, write",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=REGISTRY,
)
PENDING = Gauge("vglobal_pending_bindings", "Suspended bindings waiting for admission", registry=REGISTRY)
QUEUE_ALLOCATED = Gauge(
    "vglobal_queue_allocated",
    f"Resources held by a queue's admitted jobs {UNITS}",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_PLACED = Gauge(
    "vglobal_queue_running_resources",
    f"Of a leaf queue's allocation, what its jobs' placed pods hold {UNITS}",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_RESERVED = Gauge(
    "vglobal_queue_reserved_resources",
    f"Of a leaf queue's allocation, what is held for gangs not all placed yet (minResources) {UNITS}",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_DESERVED = Gauge(
    "vglobal_queue_deserved", f"A queue's fair share {UNITS}", ["queue", "resource"], registry=REGISTRY
)
QUEUE_CAPABILITY = Gauge(
    "vglobal_queue_capability",
    f"A queue's effective capability (realCap) {UNITS}",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_USAGE = Gauge(
    "vglobal_queue_usage",
    "A queue's usage decayed with --fair-share-half-life, in resource-seconds (cpu core-seconds, "
    "memory byte-seconds, GPU-seconds)",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_USAGE_SHARE = Gauge(
    "vglobal_queue_usage_share",
    "A queue's decayed usage as an allocation over its deserved share, dominant resource (1 = at share)",
    ["queue"],
    registry=REGISTRY,
)
QUEUE_PENDING = Gauge("vglobal_queue_pending_jobs", "Jobs waiting in a queue", ["queue"], registry=REGISTRY)
QUEUE_STARVING = Gauge(
    "vglobal_queue_waiting_too_long_jobs",
    "Jobs of a queue waiting longer than --starvation-after (0 while that is 0)",
    ["queue"],
    registry=REGISTRY,
)
QUEUE_NEVER_FIT = Gauge(
    "vglobal_queue_never_fit_jobs",
    "Waiting jobs of a queue that no candidate cluster could hold even empty (reason NeverFits)",
    ["queue"],
    registry=REGISTRY,
)
QUEUE_BUDGET = Gauge(
    "vglobal_queue_budget_gpu_hours",
    "A queue's GPU-hour budget for its period (vglobal.io/gpu-hours-budget)",
    ["queue"],
    registry=REGISTRY,
)
QUEUE_SPENT = Gauge(
    "vglobal_queue_spent_gpu_hours",
    "GPU-hours a budgeted queue and its descendants spent over the budget's period",
    ["queue"],
    registry=REGISTRY,
)
QUEUE_RUNNING = Gauge(
    "vglobal_queue_running_jobs", "Admitted, unfinished jobs of a queue", ["queue"], registry=REGISTRY
)
CLUSTER_READY = Gauge(
    "vglobal_cluster_ready",
    "1 when a cluster is Ready and not cordoned, else 0",
    ["cluster"],
    registry=REGISTRY,
)
CLUSTER_FREE = Gauge(
    "vglobal_cluster_free",
    f"Free capacity of a cluster's schedulable nodes {UNITS}",
    ["cluster", "resource"],
    registry=REGISTRY,
)
CLUSTER_CAPACITY = Gauge(
    "vglobal_cluster_capacity",
    f"What all a cluster's nodes offer, cordoned and tainted ones included {UNITS}",
    ["cluster", "resource"],
    registry=REGISTRY,
)
CLUSTER_ALLOCATABLE = Gauge(
    "vglobal_cluster_allocatable",
    "What the dispatcher may place on: the capacity of the nodes that take pods, 0 while the cluster "
    f"is NotReady or cordoned {UNITS}",
    ["cluster", "resource"],
    registry=REGISTRY,
)
LEADER = Gauge("vglobal_leader", "1 on the hub replica that runs the leader loops", registry=REGISTRY)


def _volcano_queue_gauges(what: str, help_: str) -> tuple[Gauge, Gauge, Gauge]:
    """Volcano's three gauges of one queue figure: milli-CPU, memory bytes, and the other
    resources by name (in their own units: GPUs, pods), labelled as Volcano labels them."""
    return (
        Gauge(
            f"volcano_queue_{what}_milli_cpu", f"{help_}: CPU (millicores)", ["queue_name"], registry=REGISTRY
        ),
        Gauge(
            f"volcano_queue_{what}_memory_bytes",
            f"{help_}: memory (bytes)",
            ["queue_name"],
            registry=REGISTRY,
        ),
        Gauge(
            f"volcano_queue_{what}_scalar_resources",
            f"{help_}: other resources (GPUs and others in whole units)",
            ["queue_name", "resource"],
            registry=REGISTRY,
        ),
    )


# Set by the leader's dispatch cycle, as Volcano's scheduler sets them each session.
VOLCANO_ALLOCATED = _volcano_queue_gauges("allocated", "Held by a queue's admitted, unfinished jobs")
VOLCANO_REQUEST = _volcano_queue_gauges(
    "request", "A queue's request: allocated plus what its waiting jobs ask"
)
VOLCANO_DESERVED = _volcano_queue_gauges("deserved", "A queue's fair share")
VOLCANO_CAPACITY = _volcano_queue_gauges("capacity", "A queue's spec.capability")
QUEUE_GUARANTEE = Gauge(
    "vglobal_queue_guarantee", f"A queue's spec.guarantee {UNITS}", ["queue", "resource"], registry=REGISTRY
)
QUEUE_SHARE = Gauge(
    "volcano_queue_share",
    "allocated / deserved of a queue's dominant resource",
    ["queue_name"],
    registry=REGISTRY,
)
QUEUE_WEIGHT = Gauge("volcano_queue_weight", "A queue's weight", ["queue_name"], registry=REGISTRY)
# Set by each dispatch cycle on the leader; a series the cycle did not set is removed (prune).
CYCLE_GAUGES: tuple[Gauge, ...] = (
    QUEUE_ALLOCATED, QUEUE_PLACED, QUEUE_RESERVED, QUEUE_DESERVED, QUEUE_CAPABILITY, QUEUE_USAGE,
    QUEUE_USAGE_SHARE, QUEUE_PENDING, QUEUE_RUNNING, QUEUE_STARVING, QUEUE_NEVER_FIT, CLUSTER_READY,
    CLUSTER_FREE, CLUSTER_CAPACITY, CLUSTER_ALLOCATABLE, QUEUE_GUARANTEE, QUEUE_SHARE, QUEUE_WEIGHT,
    *VOLCANO_ALLOCATED, *VOLCANO_REQUEST, *VOLCANO_DESERVED, *VOLCANO_CAPACITY,
)  # fmt: skip
# Counted by the replica that records an agent's report, once its transaction commits. Volcano's
# counters also carry job_name; here one series per queue (millions of jobs would mean as many series).
JOBS_COMPLETED = Counter(
    "volcano_job_completed_phase_count", "Jobs that reached Completed", ["queue_name"], registry=REGISTRY
)
JOBS_FAILED = Counter(
    "volcano_job_failed_phase_count", "Jobs that reached Failed", ["queue_name"], registry=REGISTRY
)
CRON_RUNS = Counter(
    "vglobal_cronjob_runs_total",
    "Jobs a CronJob made (scheduled or by hand)",
    ["namespace", "cronjob"],
    registry=REGISTRY,
)
FLOW_RUNS = Counter(
    "vglobal_jobflow_runs_total",
    "Jobs a JobFlow made for its steps",
    ["namespace", "jobflow"],
    registry=REGISTRY,
)


# (gauge, label values) -> [child, last value set]
_children: dict[tuple[int, tuple[str, ...]], list[Any]] = {}
# The series set since the last prune(), while a cycle records them.
_seen: set[tuple[int, tuple[str, ...]]] = set()


def set_gauge(gauge: Gauge, value: float, *labels: str) -> None:
    """``gauge.labels(*labels).set(value)``, without the label lookup and for changed values only:
    a dispatch cycle sets thousands of per-queue figures and few of them move."""
    key = (id(gauge), labels)
    _seen.add(key)
    got = _children.get(key)
    if got is None:
        child = gauge.labels(*labels)
        child.set(value)
        _children[key] = [child, value]
    elif got[1] != value:
        got[0].set(value)
        got[1] = value


def set_resources(gauge: Gauge, units: Mapping[str, float], *labels: str) -> None:
    """One series per resource, from canonical units to each resource's own unit (cpu cores,
    memory bytes, whole GPUs) as Kubernetes and Volcano's scalar gauges count them."""
    for r, v in units.items():
        set_gauge(gauge, v / unit_scale(r), *labels, r)


def prune(gauges: Iterable[Gauge]) -> None:
    """Remove every series of ``gauges`` not set since the last prune: a queue, cluster or resource
    that went away (or a figure that fell to nothing) must not keep reporting its last value."""
    owned = {id(g): g for g in gauges}
    gone = [key for key in _children if key[0] in owned and key not in _seen]
    for key in gone:
        owned[key[0]].remove(*key[1])
        del _children[key]
    _seen.clear()


def forget_cycle() -> None:
    """Remove every series a dispatch cycle sets (a replica that no longer leads sets none)."""
    _seen.clear()
    prune(CYCLE_GAUGES)
    PENDING.set(0)


def serve_metrics(listen: str) -> None:
    metrics_http.serve(listen, REGISTRY)


def set_volcano_resources(gauges: tuple[Gauge, Gauge, Gauge], queue: str, units: Mapping[str, int]) -> None:
    """A queue's figure in Volcano's three gauges; CPU units are millicores, memory units bytes,
    other resources' units their own (a resource absent from ``units`` is 0)."""
    cpu, memory, scalar = gauges
    set_gauge(cpu, units.get("cpu", 0), queue)
    set_gauge(memory, units.get("memory", 0), queue)
    set_resources(scalar, {r: v for r, v in units.items() if r not in ("cpu", "memory")}, queue)


def count_finished(ended: Iterable[tuple[str, str]]) -> None:
    """Count committed runs that ended Succeeded or Failed, per queue."""
    for queue, phase in ended:
        if phase == "Succeeded":
            JOBS_COMPLETED.labels(queue).inc()
        elif phase == "Failed":
            JOBS_FAILED.labels(queue).inc()
