"""Weighted water-filling of a parent's deserved among its children (Volcano proportion plugin).

Each round hands out what is left in proportion to the weights of the children that still want
more; a child's share is capped by its realCap and by its demand, then raised to its guarantee. A
child is satisfied once its demand is covered or its share stops moving. What a capped child gives
back is handed out again in the next round.
"""

from __future__ import annotations

import numpy as np

from vglobal.admission.index import FloatArray

_EPS = 1e-6


def water_fill(
    total: FloatArray,
    weights: list[int],
    real_caps: list[FloatArray],
    demands: list[FloatArray],
    guarantees: list[FloatArray],
) -> list[FloatArray]:
    """Deserved per child; `real_caps` use +inf for unlimited dimensions."""
    n = len(weights)
    deserved = [np.zeros_like(total) for _ in range(n)]
    met = [False] * n
    remaining = total.copy()
    for _ in range(64 * max(n, 1)):  # converges in far fewer rounds; the bound guards float drift
        wsum = sum(w for w, m in zip(weights, met, strict=True) if not m)
        if wsum == 0:
            break
        inc = np.zeros_like(total)
        dec = np.zeros_like(total)
        for i in range(n):
            if met[i]:
                continue
            old = deserved[i]
            new = old + remaining * (weights[i] / wsum)
            new = np.minimum(new, real_caps[i])
            new = np.minimum(new, demands[i])
            new = np.maximum(new, guarantees[i])
            if bool(np.all(demands[i] <= new + _EPS)) or bool(np.all(np.abs(new - old) <= _EPS)):
                met[i] = True
            inc += np.maximum(new - old, 0.0)
            dec += np.maximum(old - new, 0.0)
            deserved[i] = new
        left = np.maximum(remaining + dec - inc, 0.0)
        if bool(np.all(left <= _EPS)) or bool(np.all(np.abs(left - remaining) <= _EPS)):
            break
        remaining = left
    return deserved
