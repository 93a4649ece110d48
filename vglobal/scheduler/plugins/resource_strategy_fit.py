"""resource-strategy-fit: per-resource Most/LeastAllocated scoring with wildcard names and pod
overrides, plus SRA (keep scarce-resource nodes for pods that need them) and the proportional
predicate (pods without scarce resources must leave cpu/memory for the scarce ones)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from vglobal.scheduler.framework import BatchNodeOrderFn, NodeFilter, NodeOrderFn, Plugin
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import FloatArray, IntArray
from vglobal.scheduler.session import Session

MOST, LEAST = "MostAllocated", "LeastAllocated"
DEFAULT_WEIGHT = 10
SCORING_TYPE_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"
PROPORTION_FAILED = "node(s) would not keep cpu/memory in proportion to their scarce resources"

Strategy = tuple[str, int]  # (type, weight)


def parse_resources(raw: Any) -> dict[str, Strategy]:
    """``{name: {type, weight}}``; weight <= 0 -> 1, unknown type -> Least, a bare ``*`` dropped."""
    if not isinstance(raw, Mapping) or not raw:
        return {"cpu": (LEAST, 1), "memory": (LEAST, 1)}
    out: dict[str, Strategy] = {}
    for name, spec in raw.items():
        name = str(name)
        if name == "*" or name.count("*") > 1 or ("*" in name and not name.endswith("*")):
            continue
        spec = spec if isinstance(spec, Mapping) else {}
        kind = spec.get("type", LEAST)
        kind = kind if kind in (MOST, LEAST) else LEAST
        try:
            weight = int(spec.get("weight", 1))
        except (TypeError, ValueError):
            weight = 1
        out[name] = (kind, weight if weight > 0 else 1)
    return out


def lookup(strategies: Mapping[str, Strategy], resource: str) -> Strategy | None:
    """Exact name first, else the longest matching ``prefix*`` key."""
    if resource in strategies:
        return strategies[resource]
    best: tuple[int, Strategy] | None = None
    for key, strategy in strategies.items():
        if key.endswith("*") and resource.startswith(key[:-1]) and (best is None or len(key) > best[0]):
            best = (len(key), strategy)
    return best[1] if best else None


def pod_strategies(task: TaskInfo, default: Mapping[str, Strategy]) -> Mapping[str, Strategy]:
    """Pod annotations override the conf: one scoring type, and optional per-resource weights."""
    kind = task.spec.annotations.get(SCORING_TYPE_ANNOTATION)
    if kind not in (MOST, LEAST):
        return default
    weights: dict[str, Any] = {}
    raw = task.spec.annotations.get(WEIGHT_ANNOTATION)
    if raw:
        try:
            parsed = json.loads(raw)
            weights = parsed if isinstance(parsed, dict) else {}
        except ValueError:
            weights = {}
    if weights:
        return {
            str(k): (kind, int(v) if isinstance(v, int | float) and v > 0 else 1) for k, v in weights.items()
        }
    return {k: (kind, w) for k, (_, w) in default.items()}


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


class ResourceStrategyFitPlugin(Plugin[Session]):
    name = "resource-strategy-fit"

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arg_int("resourceStrategyFitWeight", DEFAULT_WEIGHT)
        weight = weight if weight > 0 else DEFAULT_WEIGHT
        strategies = parse_resources(self.arguments.get("resources"))
        nodes, index = ssn.nodes, ssn.index
        cache: dict[tuple[str, str], list[tuple[int, str, int]]] = {}

        def plan(task: TaskInfo) -> list[tuple[int, str, int]]:
            key = (task.job.uid, task.role)
            found = cache.get(key)
            if found is None:
                chosen = pod_strategies(task, strategies)
                found = []
                for col in task.cols:
                    strategy = lookup(chosen, index.names[col])
                    if strategy is not None:
                        found.append((int(col), strategy[0], strategy[1]))
                cache[key] = found
            return found

        def batch(task: TaskInfo, rows: IntArray) -> FloatArray:
            score = np.zeros(rows.size)
            overflow = np.zeros(rows.size, dtype=np.bool_)
            weight_sum = 0
            for col, kind, w in plan(task):
                cap = nodes.alloc[rows, col]
                final = nodes.used[rows, col] + task.req[col]
                overflow |= (cap > 0) & (final > cap)
                safe = np.maximum(cap, 1)
                part = final * w / safe if kind == MOST else (cap - final) * w / safe
                score += np.where(cap > 0, part, 0.0)
                weight_sum += w
            score[overflow] = 0.0
            if weight_sum:
                score /= weight_sum
            out: FloatArray = score * 100.0 * weight
            return out

        def one(task: TaskInfo, row: int) -> float:
            score, weight_sum = 0.0, 0
            for col, kind, w in plan(task):
                cap = int(nodes.alloc[row, col])
                if cap:
                    final = int(nodes.used[row, col]) + int(task.req[col])
                    if final > cap:
                        return 0.0
                    score += (final if kind == MOST else cap - final) * w / cap
                weight_sum += w
            return (score / weight_sum if weight_sum else score) * 100.0 * weight

        sra = self._open_sra(ssn)
        if sra is None:
            ssn.add_node_order_fn(self.name, one, batch)
        else:
            sra_one, sra_batch = sra
            ssn.add_node_order_fn(
                self.name,
                lambda t, r: one(t, r) + sra_one(t, r),
                lambda t, rows: batch(t, rows) + sra_batch(t, rows),
            )
        self._open_proportional(ssn)

    def _open_sra(self, ssn: Session) -> tuple[NodeOrderFn, BatchNodeOrderFn] | None:
        """SRA scores, added to the strategy score of the same plugin."""
        sra = self.arguments.get("sra")
        if not isinstance(sra, Mapping) or not _truthy(sra.get("enable")):
            return None
        weights_raw = sra.get("resourceWeight") or {}
        scarce: dict[int, int] = {}
        for name in _names(sra.get("resources")):
            w = weights_raw.get(name, 1) if isinstance(weights_raw, Mapping) else 1
            w = int(w) if isinstance(w, int | float) and w >= 0 else 1
            if name in ssn.index.col:
                scarce[ssn.index.col[name]] = w
            else:
                scarce[-1 - len(scarce)] = w  # a resource no node has still counts in the sum
        total_w = sum(scarce.values())
        sra_weight = int(sra.get("weight", 1)) if isinstance(sra.get("weight", 1), int | float) else 1
        alloc = ssn.nodes.alloc
        present = np.zeros(len(ssn.nodes))
        for col, w in scarce.items():
            if col >= 0:
                present += np.where(alloc[:, col] > 0, w, 0)

        def batch(task: TaskInfo, rows: IntArray) -> FloatArray:
            has_all = (alloc[np.ix_(rows, task.cols)] > 0).all(axis=1)
            score = present[rows] / total_w if total_w > 0 else present[rows]
            score = (1.0 - score) if total_w > 0 else score
            out: FloatArray = np.where(has_all, score * 100.0 * sra_weight, 0.0)
            return out

        def one(task: TaskInfo, row: int) -> float:
            if not all(alloc[row, c] > 0 for c in task.cols):
                return 0.0
            score = float(present[row])
            if total_w > 0:
                score = 1.0 - score / total_w
            return score * 100.0 * sra_weight

        return one, batch

    def _open_proportional(self, ssn: Session) -> None:
        cfg = self.arguments.get("proportional")
        if not isinstance(cfg, Mapping) or not _truthy(cfg.get("enable")):
            return
        ratios = cfg.get("resourceProportion") or {}
        index, nodes = ssn.index, ssn.nodes
        cpu, mem = index.col["cpu"], index.col["memory"]
        scarce = [(index.col[n], n) for n in _names(cfg.get("resources")) if n in index.col]

        def predicate(task: TaskInfo) -> list[NodeFilter]:
            if any(task.req[c] > 0 for c, _ in scarce):
                return []
            ok = np.ones(len(nodes), dtype=np.bool_)
            for col, name in scarce:
                idle_r = nodes.idle[:, col].astype(np.float64)
                cpu_ratio = float(ratios.get(f"{name}.cpu", 0) or 0)
                mem_ratio = float(ratios.get(f"{name}.memory", 0) or 0)
                ok &= nodes.idle[:, cpu] - task.req[cpu] >= idle_r * cpu_ratio
                ok &= nodes.idle[:, mem] - task.req[mem] >= idle_r * mem_ratio * 1e6
            return [NodeFilter(PROPORTION_FAILED, ok, unresolvable=False)]

        ssn.add_predicate_fn(self.name, predicate)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")
