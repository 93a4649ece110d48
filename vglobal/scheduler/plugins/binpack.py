"""binpack: prefer nodes that the task fills most (Volcano ``BinPackingScore``)."""

from __future__ import annotations

import numpy as np

from vglobal.scheduler.framework import Plugin
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import FloatArray, IntArray
from vglobal.scheduler.registry import register_plugin
from vglobal.scheduler.session import Session

MAX_NODE_SCORE = 100


class BinpackPlugin(Plugin):
    name = "binpack"

    def weights(self) -> dict[str, int]:
        out = {"cpu": self.arg_int("binpack.cpu", 1), "memory": self.arg_int("binpack.memory", 1)}
        extra = self.arguments.get("binpack.resources")
        if isinstance(extra, str):
            for name in (n.strip() for n in extra.split(",")):
                if name:
                    out[name] = self.arg_int(f"binpack.resources.{name}", 1)
        return {k: v for k, v in out.items() if v >= 0}

    def on_session_open(self, ssn: Session) -> None:
        weight = self.arg_int("binpack.weight", 1)
        if weight == 0:
            return
        cols = [(ssn.index.col[r], w) for r, w in self.weights().items() if r in ssn.index.col]
        nodes = ssn.nodes
        scale = float(MAX_NODE_SCORE * weight)

        def batch(task: TaskInfo, rows: IntArray) -> FloatArray:
            score = np.zeros(rows.size, dtype=np.float64)
            overflow = np.zeros(rows.size, dtype=np.bool_)
            weight_sum = 0
            for c, w in cols:
                req = int(task.req[c])
                if req == 0:
                    continue
                cap = nodes.alloc[rows, c]
                final = nodes.used[rows, c] + req
                if w:
                    overflow |= (final > cap) & (cap > 0)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        score += np.where(cap > 0, final * w / np.maximum(cap, 1), 0.0)
                weight_sum += w
            score[overflow] = 0.0
            if weight_sum > 0:
                score /= weight_sum
            return score * scale

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


register_plugin(BinpackPlugin.name, BinpackPlugin)
