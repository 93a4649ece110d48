"""Prometheus metrics, served on --metrics-listen in the text format."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry()

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
    "Resources held by a queue's admitted jobs",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_DESERVED = Gauge(
    "vglobal_queue_deserved", "A queue's fair share", ["queue", "resource"], registry=REGISTRY
)
QUEUE_CAPABILITY = Gauge(
    "vglobal_queue_capability",
    "A queue's effective capability (realCap)",
    ["queue", "resource"],
    registry=REGISTRY,
)
QUEUE_USAGE = Gauge(
    "vglobal_queue_usage",
    "A queue's usage in resource-seconds decayed with --fair-share-half-life (canonical units)",
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
QUEUE_RUNNING = Gauge(
    "vglobal_queue_running_jobs", "Admitted, unfinished jobs of a queue", ["queue"], registry=REGISTRY
)
CLUSTER_READY = Gauge(
    "vglobal_cluster_ready",
    "1 when a cluster is Ready and not cordoned",
    ["cluster"],
    registry=REGISTRY,
)
CLUSTER_FREE = Gauge(
    "vglobal_cluster_free", "Free capacity of a cluster", ["cluster", "resource"], registry=REGISTRY
)
LEADER = Gauge("vglobal_leader", "1 on the hub replica that runs the leader loops", registry=REGISTRY)


# (gauge, label values) -> [child, last value set]
_children: dict[tuple[int, tuple[str, ...]], list[Any]] = {}


def set_gauge(gauge: Gauge, value: float, *labels: str) -> None:
    """``gauge.labels(*labels).set(value)``, without the label lookup and for changed values only:
    a dispatch cycle sets thousands of per-queue figures and few of them move."""
    key = (id(gauge), labels)
    got = _children.get(key)
    if got is None:
        child = gauge.labels(*labels)
        child.set(value)
        _children[key] = [child, value]
    elif got[1] != value:
        got[0].set(value)
        got[1] = value


def serve_metrics(listen: str) -> None:
    host, _, port = listen.rpartition(":")
    start_http_server(int(port), addr=host or "127.0.0.1", registry=REGISTRY)
