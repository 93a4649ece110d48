"""Node filtering, scoring and choice for one task, vectorised over the node table.

Deterministic where Volcano is random: predicates always start at node row 0 (rows are sorted by
name) and the best-score tie goes to the lowest row, i.e. the lowest node name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.scheduler.framework import NodeFilter
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import BoolArray, FloatArray, IntArray
from vglobal.scheduler.session import Session

MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
BASE_PERCENTAGE = 50


def nodes_to_find(num_nodes: int, percentage: int = 0) -> int:
    """Volcano's ``CalculateNumOfFeasibleNodesToFind`` (integer arithmetic)."""
    if num_nodes <= MIN_FEASIBLE_NODES or percentage >= 100:
        return num_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = BASE_PERCENTAGE - num_nodes // 125
        adaptive = max(adaptive, MIN_FEASIBLE_PERCENTAGE)
    found = num_nodes * adaptive // 100
    return max(found, MIN_FEASIBLE_NODES)


@dataclass(frozen=True, slots=True)
class PredicateResult:
    rows: IntArray  # feasible rows in node order, at most nodes_to_find of them
    fit_error: str  # "" when rows is non-empty


def resource_filters(ssn: Session, task: TaskInfo, available: IntArray) -> list[NodeFilter]:
    """``InitResreq <= available`` per requested dimension; failures are plain Unschedulable."""
    out = []
    for col in np.flatnonzero(task.req > 0):
        passed: BoolArray = available[:, col] >= task.req[col]
        out.append(NodeFilter(f"Insufficient {ssn.index.names[col]}", passed, unresolvable=False))
    return out


def fit_error_message(num_nodes: int, resources: Sequence[NodeFilter], others: Sequence[NodeFilter]) -> str:
    """k8s style: every insufficient resource counts; other filters count the first failure."""
    counts: Counter[str] = Counter()
    remaining = np.ones(num_nodes, dtype=np.bool_)
    failed_resource = np.zeros(num_nodes, dtype=np.bool_)
    for f in resources:
        bad = ~f.passed
        n = int(bad.sum())
        if n:
            counts[f.reason] += n
        failed_resource |= bad
    remaining &= ~failed_resource
    for f in others:
        bad = remaining & ~f.passed
        n = int(bad.sum())
        if n:
            counts[f.reason] += n
        remaining &= f.passed
    detail = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))
    return (
        f"0/{num_nodes} nodes are available: {detail}." if detail else f"0/{num_nodes} nodes are available."
    )


def predicate_nodes(
    ssn: Session, task: TaskInfo, *, limit: bool = True, candidates: IntArray | None = None
) -> PredicateResult:
    """Allocate's predicate: ``InitResreq <= FutureIdle`` and every plugin filter.

    ``candidates`` restricts the search to some rows (the nodes of one HyperNode).
    """
    others = ssn.predicate_filters(task)
    n = len(ssn.nodes)
    cols = task.cols
    mask = (ssn.nodes.future_idle[:, cols] >= task.req[cols]).all(axis=1)
    if candidates is not None:
        keep = np.zeros(n, dtype=np.bool_)
        keep[candidates] = True
        mask &= keep
    for f in others:
        mask &= f.passed
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        resources = resource_filters(ssn, task, ssn.nodes.future_idle)
        if candidates is not None:
            keep = np.zeros(n, dtype=np.bool_)
            keep[candidates] = True
            resources = [NodeFilter(f.reason, f.passed[keep], f.unresolvable) for f in resources]
            others = [NodeFilter(f.reason, f.passed[keep], f.unresolvable) for f in others]
            n = int(keep.sum())
        return PredicateResult(rows, fit_error_message(n, resources, others))
    if limit:
        # Volcano's --percentage-nodes-to-find, here the allocate configuration's percentageOfNodesToFind
        pct = int(ssn.conf.configurations.get("allocate", {}).get("percentageOfNodesToFind", 0))
        rows = rows[: nodes_to_find(n if candidates is None else len(candidates), pct)]
    return PredicateResult(rows, "")


def preempt_predicate_rows(ssn: Session, task: TaskInfo) -> IntArray:
    """``PredicateForPreemptAction``: only unresolvable failures remove a node."""
    mask = np.ones(len(ssn.nodes), dtype=np.bool_)
    for f in ssn.predicate_filters(task):
        if f.unresolvable:
            mask &= f.passed
    return np.flatnonzero(mask)


def score_nodes(ssn: Session, task: TaskInfo, rows: IntArray) -> FloatArray:
    """Sum of all NodeOrder and BatchNodeOrder scores for ``rows``."""
    scores = np.zeros(rows.size, dtype=np.float64)
    for fn, batch in ssn.node_order_fns():
        if ssn.vectorized and batch is not None:
            scores += batch(task, rows)
        elif fn is not None:
            scores += np.fromiter((fn(task, int(r)) for r in rows), dtype=np.float64, count=rows.size)
        elif batch is not None:
            scores += batch(task, rows)
    for batch_fn in ssn.batch_node_order_fns():
        scores += batch_fn(task, rows)
    return scores


def best_row(ssn: Session, task: TaskInfo, rows: IntArray) -> tuple[int, float]:
    """One candidate: take it; else the highest score, ties to the lowest name."""
    if rows.size == 1:
        return int(rows[0]), 0.0
    scores = score_nodes(ssn, task, rows)
    i = int(np.argmax(scores))
    return int(rows[i]), float(scores[i])


def fits(req: IntArray, available: IntArray) -> bool:
    return bool((req <= available).all())


def pick_row(ssn: Session, task: TaskInfo, rows: IntArray) -> int | None:
    """Nodes where the task fits Idle first; only if none, nodes where it fits FutureIdle."""
    cols = task.cols
    idle_ok = (ssn.nodes.idle[np.ix_(rows, cols)] >= task.req[cols]).all(axis=1)
    for group in (rows[idle_ok], rows[~idle_ok]):
        if group.size:
            return best_row(ssn, task, group)[0]
    return None


def fits_idle(ssn: Session, task: TaskInfo, row: int) -> bool:
    return bool((ssn.nodes.idle[row, task.cols] >= task.req[task.cols]).all())


def fits_future(ssn: Session, task: TaskInfo, row: int) -> bool:
    return bool((ssn.nodes.future_idle[row, task.cols] >= task.req[task.cols]).all())


def nominated_rows(ssn: Session, task: TaskInfo, candidates: IntArray | None = None) -> IntArray | None:
    """The rows of the nodes the hub freed for the task's job (its nominated nodes) that are in
    this session and among ``candidates``; None if there are none."""
    names = task.job.spec.nominated_nodes
    if not names:
        return None
    rows = [r for n in names if (r := ssn.nodes.row.get(n)) is not None]
    if candidates is not None:
        allowed = set(candidates.tolist())
        rows = [r for r in rows if r in allowed]
    return np.array(sorted(rows), dtype=np.int64) if rows else None


def nominated_fit(ssn: Session, task: TaskInfo, candidates: IntArray | None = None) -> PredicateResult | None:
    """Allocate's predicate on the task's nominated nodes only, if any passes: Volcano tries a
    pod's nominated node before every other, as it is likely the only one it fits."""
    rows = nominated_rows(ssn, task, candidates)
    if rows is None:
        return None
    found = predicate_nodes(ssn, task, limit=False, candidates=rows)
    return found if found.rows.size else None
