"""binpack: prefer nodes that the task fills most (Volcano ``BinPackingScore``)."""

from __future__ import annotations

import numpy as np

from vglobal.scheduler.framework import Plugin
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import FloatArray, IntArray
from vglobal.scheduler.session import Session

MAX_NODE_SCORE = 100


class BinpackPlugin(Plugin[Session]):
    name = "binpack"

    def weights(self) -> dict[str, int]:
        out = {"cpu": self.arg_int("binpack.cpu", 1), "memory": self.arg_int("binpack.memory", 1)}
        extra = self.arguments.get("binpack.resources")
        if isinstance(extra, str):
            for name in (n.strip() for n in extra.split(",")):
                if name:
                    out[name] = self.arg_int(f"binpack.resources.{name}", 1)
        # Volcano resets a negative weight to 1
        return {k: (v if v >= 0 else 1) for k, v in out.items()}

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arg_int("binpack.weight", 1)
        if weight == 0:
            return
        cols = [(ssn.index.col[r], w) for r, w in self.weights().items() if r in ssn.index.col]
        nodes = ssn.nodes
        scale = float(MAX_NODE_SCORE * weight)

        col_idx = np.array([c for c, _ in cols], dtype=np.int64)
        col_w = np.array([w for _, w in cols], dtype=np.float64)

        def batch(task: TaskInfo, rows: IntArray) -> FloatArray:
            asked = task.req[col_idx] > 0
            if not asked.any():
                return np.zeros(rows.size, dtype=np.float64)
            c_idx, w = col_idx[asked], col_w[asked]
            cap = nodes.alloc[rows][:, c_idx]
            final = nodes.used[rows][:, c_idx] + task.req[c_idx]
            weighted = w > 0
            overflow = ((final > cap) & (cap > 0) & weighted).any(axis=1)
            parts = np.where((cap > 0) & weighted, final * w / np.maximum(cap, 1), 0.0)
            score = parts.sum(axis=1)
            weight_sum = float(w.sum())
            if weight_sum > 0:
                score /= weight_sum
            score[overflow] = 0.0
            out: FloatArray = score * scale
            return out

        def one(task: TaskInfo, row: int) -> float:
            score = 0.0
            weight_sum = 0
            for c, w in cols:
                req = int(task.req[c])
                if req == 0:
                    continue
                cap = int(nodes.alloc[row, c])
                if cap and w:
                    final = int(nodes.used[row, c]) + req
                    if final > cap:
                        return 0.0
                    score += final * w / cap
                weight_sum += w
            if weight_sum > 0:
                score /= weight_sum
            return score * scale

        ssn.add_node_order_fn(self.name, one, batch)
