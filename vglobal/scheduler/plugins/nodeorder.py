"""nodeorder: the kube-scheduler scores Volcano wires in (least / most requested, balanced
allocation, preferred node affinity, taint toleration), each 0-100 times its weight."""

from __future__ import annotations

import math

import numpy as np

from vglobal.scheduler import k8s
from vglobal.scheduler.framework import Plugin
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import FloatArray, IntArray
from vglobal.scheduler.session import Session

MAX = 100
_SOFT = frozenset({"PreferNoSchedule"})


class NodeOrderPlugin(Plugin[Session]):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        least_w = self.arg_int("leastrequested.weight", 1)
        most_w = self.arg_int("mostrequested.weight", 0)
        balanced_w = self.arg_int("balancedresource.weight", 1)
        affinity_w = self.arg_int("nodeaffinity.weight", 2)
        taint_w = self.arg_int("tainttoleration.weight", 3)
        nodes = ssn.nodes
        cpu, mem = ssn.index.col["cpu"], ssn.index.col["memory"]
        gpu = ssn.index.col.get("nvidia.com/gpu")
        balanced_cols = [cpu, mem] + ([gpu] if gpu is not None else [])
        affinity_cache: dict[tuple[str, str], FloatArray] = {}
        taint_cache: dict[tuple[str, str], IntArray] = {}

        def affinity_scores(task: TaskInfo) -> FloatArray:
            key = (task.job.uid, task.role)
            cached = affinity_cache.get(key)
            if cached is None:
                aff = task.spec.affinity
                if k8s.preferred_affinity_terms(aff):
                    cached = np.array(
                        [
                            k8s.preferred_affinity_score(aff, labels, name)
                            for labels, name in zip(nodes.labels, nodes.names, strict=True)
                        ],
                        dtype=np.float64,
                    )
                else:
                    cached = np.zeros(len(nodes), dtype=np.float64)
                affinity_cache[key] = cached
            return cached

        cpu_mem = np.array([cpu, mem])
        bcols = np.array(balanced_cols)

        # Vectorised form: the same integer arithmetic as kube-scheduler, on (rows x dims) blocks.
        def batch(task: TaskInfo, rows: IntArray) -> FloatArray:
            total = np.zeros(rows.size, dtype=np.float64)
            alloc = nodes.alloc[rows]
            if least_w or most_w:
                cap = alloc[:, cpu_mem]
                req = nodes.nonzero_used[rows] + np.array(task.nonzero, dtype=np.int64)
                safe = np.maximum(cap, 1)
                if least_w:
                    least = np.where((cap == 0) | (req > cap), 0, (cap - req) * MAX // safe)
                    total += (least.sum(axis=1) // 2) * least_w
                if most_w:
                    most = np.where(cap == 0, 0, np.minimum(req, cap) * MAX // safe)
                    total += (most.sum(axis=1) // 2) * most_w
            if balanced_w and not task.best_effort:
                cap = alloc[:, bcols]
                req = nodes.used[rows][:, bcols] + nodes.pipelined[rows][:, bcols] + task.req[bcols]
                total += _balanced_batch(cap, np.minimum(1.0, req / np.maximum(cap, 1))) * balanced_w
            if affinity_w and k8s.preferred_affinity_terms(task.spec.affinity):
                total += affinity_scores(task)[rows] * affinity_w
            return total

        def one(task: TaskInfo, row: int) -> float:
            total = 0.0
            if least_w or most_w:
                least = most = 0
                for k, col in ((0, cpu), (1, mem)):
                    cap = int(nodes.alloc[row, col])
                    req = int(nodes.nonzero_used[row, k]) + task.nonzero[k]
                    least += 0 if cap == 0 or req > cap else (cap - req) * MAX // cap
                    most += 0 if cap == 0 else min(req, cap) * MAX // cap
                total += (least // 2) * least_w + (most // 2) * most_w
            if balanced_w and not task.best_effort:
                fractions = []
                for col in balanced_cols:
                    cap = int(nodes.alloc[row, col])
                    if cap == 0:
                        continue
                    req = int(nodes.used[row, col]) + int(nodes.pipelined[row, col]) + int(task.req[col])
                    fractions.append(min(1.0, req / cap))
                total += _balanced_one(fractions) * balanced_w
            if affinity_w:
                aff = task.spec.affinity
                if k8s.preferred_affinity_terms(aff):
                    total += (
                        k8s.preferred_affinity_score(aff, nodes.labels[row], nodes.names[row]) * affinity_w
                    )
            return total

        ssn.add_node_order_fn(self.name, one, batch)

        if taint_w and any(nodes.taints):

            def taint_counts(task: TaskInfo) -> IntArray:
                key = (task.job.uid, task.role)
                cached = taint_cache.get(key)
                if cached is None:
                    cached = np.array(
                        [k8s.untolerated(t, task.spec.tolerations, _SOFT) for t in nodes.taints],
                        dtype=np.int64,
                    )
                    taint_cache[key] = cached
                return cached

            def taints(task: TaskInfo, rows: IntArray) -> FloatArray:
                counts = taint_counts(task)[rows]
                top = int(counts.max()) if counts.size else 0
                if top == 0:
                    return np.full(rows.size, float(MAX * taint_w))
                return ((MAX - counts * MAX // top) * taint_w).astype(np.float64)

            ssn.add_batch_node_order_fn(self.name, taints)
        elif taint_w:
            # No tainted node: k8s normalises every node to the maximum score.
            ssn.add_batch_node_order_fn(self.name, lambda _t, rows: np.full(rows.size, float(MAX * taint_w)))


def _balanced_one(fractions: list[float]) -> int:
    if len(fractions) < 2:
        return MAX
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    else:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX)


def _balanced_batch(caps: IntArray, fractions: FloatArray) -> FloatArray:
    """Per row, the std over the dimensions with non-zero allocatable (as ``_balanced_one``)."""
    present = caps > 0
    count = present.sum(axis=1)
    if caps.shape[1] == 2 and present.all():
        std = np.abs(fractions[:, 0] - fractions[:, 1]) / 2
        out: FloatArray = np.floor((1 - std) * MAX)
        return out
    denom = np.maximum(count, 1)
    mean = np.where(present, fractions, 0.0).sum(axis=1) / denom
    std = np.sqrt(np.where(present, (fractions - mean[:, None]) ** 2, 0.0).sum(axis=1) / denom)
    hi = np.where(present, fractions, -np.inf).max(axis=1)
    lo = np.where(present, fractions, np.inf).min(axis=1)
    std = np.where(count == 2, (hi - lo) / 2, std)
    out = np.where(count >= 2, np.floor((1 - std) * MAX), float(MAX))
    return out
