"""What a dispatch cycle tells Prometheus and the log once its admissions are durable."""

from __future__ import annotations

import logging

from vglobal.admission import AdmissionResult, Snapshot
from vglobal.admission.snapshot import QueueSnap, QueueStatus
from vglobal.hub import metrics
from vglobal.model.resources import queue_share

log = logging.getLogger("vglobal.hub.dispatch")


def record_admissions(done: list[tuple[str, str, int]], queue_of: dict[str, str]) -> None:
    """Logs and the admissions counter, once the admissions are committed."""
    per_pair: dict[tuple[str, str], int] = {}
    debug = log.isEnabledFor(logging.DEBUG)
    for uid, cluster, gen in done:
        key = (queue_of.get(uid, ""), cluster)
        per_pair[key] = per_pair.get(key, 0) + 1
        if debug:
            log.debug("admit job=%s queue=%s cluster=%s generation=%d", uid, key[0], cluster, gen)
    for (queue, cluster), n in per_pair.items():
        metrics.ADMISSIONS.labels(queue=queue, cluster=cluster).inc(n)
    if done:
        per_cluster: dict[str, int] = {}
        for (_, cluster), n in per_pair.items():
            per_cluster[cluster] = per_cluster.get(cluster, 0) + n
        log.info(
            "admitted %d jobs: %s", len(done), ", ".join(f"{c}={n}" for c, n in sorted(per_cluster.items()))
        )


def record_cycle(
    snapshot: Snapshot,
    result: AdmissionResult,
    done: list[tuple[str, str, int]],
    queue_of: dict[str, str],
    reclaimed: int,
) -> None:
    """Every metric of a cycle, set together, so a scrape sees the admissions counted together
    with the queue figures they moved."""
    record_admissions(done, queue_of)
    metrics.RECLAIMS.inc(reclaimed)
    metrics.PENDING.set(len(snapshot.pending) - len(done))
    set_gauge = metrics.set_gauge
    specs = {q.name: q for q in snapshot.queues}
    for name, q in result.queues.items():
        for r, v in q.allocated.items():
            set_gauge(metrics.QUEUE_ALLOCATED, v, name, r)
        for r, v in q.deserved.items():
            set_gauge(metrics.QUEUE_DESERVED, v, name, r)
        for r, v in (q.real_capability or {}).items():
            set_gauge(metrics.QUEUE_CAPABILITY, v, name, r)
        if snapshot.policy.fair_share_half_life > 0:
            for r, u in q.usage.items():
                set_gauge(metrics.QUEUE_USAGE, u, name, r)
            set_gauge(metrics.QUEUE_USAGE_SHARE, q.usage_share, name)
        set_gauge(metrics.QUEUE_PENDING, q.pending, name)
        set_gauge(metrics.QUEUE_RUNNING, q.running, name)
        record_volcano_queue(q, specs.get(name))
    for spec in snapshot.queues:  # leaf figures as read: what runs and what gangs hold in reserve
        for r, v in spec.allocated.items():
            placed = spec.running.get(r, 0)
            set_gauge(metrics.QUEUE_PLACED, placed, spec.name, r)
            set_gauge(metrics.QUEUE_RESERVED, max(v - placed, 0), spec.name, r)
    for c in snapshot.clusters:
        set_gauge(metrics.CLUSTER_READY, 1 if c.schedulable else 0, c.name)
        free: dict[str, int] = {}
        for n in c.nodes:
            for r, v in n.free.items():
                free[r] = free.get(r, 0) + v
        for r, v in free.items():
            set_gauge(metrics.CLUSTER_FREE, v, c.name, r)


def record_volcano_queue(q: QueueStatus, spec: QueueSnap | None) -> None:
    """A queue's figures under Volcano's names; ``spec`` None for the root, which has no spec."""
    set_volcano = metrics.set_volcano_resources
    set_volcano(metrics.VOLCANO_ALLOCATED, q.name, q.allocated)
    set_volcano(metrics.VOLCANO_REQUEST, q.name, q.request)
    set_volcano(metrics.VOLCANO_DESERVED, q.name, q.deserved)
    metrics.set_gauge(metrics.QUEUE_SHARE, queue_share(q.allocated, q.deserved), q.name)
    for r, v in q.guarantee.items():
        metrics.set_gauge(metrics.QUEUE_GUARANTEE, v, q.name, r)
    if spec is not None:
        set_volcano(metrics.VOLCANO_CAPACITY, q.name, spec.capability or {})
        metrics.set_gauge(metrics.QUEUE_WEIGHT, spec.weight, q.name)
