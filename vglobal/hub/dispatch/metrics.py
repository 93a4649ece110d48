"""What a dispatch cycle tells Prometheus and the log once its admissions are durable."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from vglobal.admission import AdmissionResult, ClusterSnap, Snapshot
from vglobal.admission.snapshot import QueueSnap, QueueStatus, Wait
from vglobal.hub import metrics
from vglobal.model.reasons import WaitKind
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
    budgets: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Every metric of a cycle, set together, so a scrape sees the admissions counted together
    with the queue figures they moved. A series this cycle did not set (its queue, cluster or
    resource gone, or the figure fallen to nothing) is removed in the same go."""
    record_admissions(done, queue_of)
    metrics.RECLAIMS.inc(reclaimed)
    metrics.PENDING.set(len(snapshot.pending) - len(done))
    set_gauge, set_resources = metrics.set_gauge, metrics.set_resources
    specs = {q.name: q for q in snapshot.queues}
    starving, never_fit = waiting_counts(snapshot, result)
    for name, q in result.queues.items():
        set_resources(metrics.QUEUE_ALLOCATED, q.allocated, name)
        set_resources(metrics.QUEUE_DESERVED, q.deserved, name)
        set_resources(metrics.QUEUE_CAPABILITY, q.real_capability or {}, name)
        if snapshot.policy.fair_share_half_life > 0:
            set_resources(metrics.QUEUE_USAGE, q.usage, name)
            set_gauge(metrics.QUEUE_USAGE_SHARE, q.usage_share, name)
        set_gauge(metrics.QUEUE_PENDING, q.pending, name)
        set_gauge(metrics.QUEUE_RUNNING, q.running, name)
        set_gauge(metrics.QUEUE_STARVING, starving.get(name, 0), name)
        set_gauge(metrics.QUEUE_NEVER_FIT, never_fit.get(name, 0), name)
        record_volcano_queue(q, specs.get(name))
    for name, b in (budgets or {}).items():
        set_gauge(metrics.QUEUE_BUDGET, b["gpuHours"], name)
        set_gauge(metrics.QUEUE_SPENT, b["spentGpuHours"], name)
    for spec in snapshot.queues:  # leaf figures as read: what runs and what gangs hold in reserve
        placed = {r: spec.running.get(r, 0) for r in spec.allocated}
        set_resources(metrics.QUEUE_PLACED, placed, spec.name)
        set_resources(
            metrics.QUEUE_RESERVED, {r: max(v - placed[r], 0) for r, v in spec.allocated.items()}, spec.name
        )
    for c in snapshot.clusters:
        set_gauge(metrics.CLUSTER_READY, 1 if c.schedulable else 0, c.name)
        free: dict[str, int] = {}
        capacity: dict[str, int] = {}
        for n in c.nodes:
            for r, v in n.free.items():
                free[r] = free.get(r, 0) + v
            for r, v in n.allocatable.items():
                capacity[r] = capacity.get(r, 0) + v
        set_resources(metrics.CLUSTER_FREE, {r: free.get(r, 0) for r in capacity}, c.name)
        set_resources(metrics.CLUSTER_CAPACITY, capacity, c.name)
        allocatable = usable_capacity(c) if c.schedulable else dict.fromkeys(capacity, 0)
        set_resources(metrics.CLUSTER_ALLOCATABLE, allocatable, c.name)
    metrics.prune(metrics.CYCLE_GAUGES)


def usable_capacity(c: ClusterSnap) -> dict[str, int]:
    """The allocatable of the nodes that take pods (the snapshot gives the others no free room)."""
    out: dict[str, int] = dict.fromkeys({r for n in c.nodes for r in n.allocatable}, 0)
    for n in c.nodes:
        if n.free:
            for r, v in n.allocatable.items():
                out[r] += v
    return out


def waiting_counts(snapshot: Snapshot, result: AdmissionResult) -> tuple[dict[str, int], dict[str, int]]:
    """Per queue, the jobs still waiting past --starvation-after, and those that can never fit."""
    starving: dict[str, int] = {}
    never_fit: dict[str, int] = {}
    after = snapshot.policy.starvation_after
    for j in snapshot.pending:
        d = result.decisions.get(j.uid)
        if not isinstance(d, Wait):
            continue
        if after > 0 and snapshot.now - j.waiting_since >= after:
            starving[j.queue] = starving.get(j.queue, 0) + 1
        if d.kind is WaitKind.NeverFits:
            never_fit[j.queue] = never_fit.get(j.queue, 0) + 1
    return starving, never_fit


def record_volcano_queue(q: QueueStatus, spec: QueueSnap | None) -> None:
    """A queue's figures under Volcano's names; ``spec`` None for the root, which has no spec."""
    set_volcano = metrics.set_volcano_resources
    set_volcano(metrics.VOLCANO_ALLOCATED, q.name, q.allocated)
    set_volcano(metrics.VOLCANO_REQUEST, q.name, q.request)
    set_volcano(metrics.VOLCANO_DESERVED, q.name, q.deserved)
    metrics.set_gauge(metrics.QUEUE_SHARE, queue_share(q.allocated, q.deserved), q.name)
    metrics.set_resources(metrics.QUEUE_GUARANTEE, q.guarantee, q.name)
    if spec is not None:
        set_volcano(metrics.VOLCANO_CAPACITY, q.name, spec.capability or {})
        metrics.set_gauge(metrics.QUEUE_WEIGHT, spec.weight, q.name)
