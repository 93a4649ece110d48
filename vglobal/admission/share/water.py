"""Weighted water-filling of a parent's deserved among its children (Volcano proportion plugin).

Each round hands out what is left in proportion to the weights of the children that still want
more; a child's share is capped by its realCap and by its demand, then raised to its guarantee. A
child is satisfied once its demand is covered or its share stops moving. What a capped child gives
back is handed out again in the next round.
"""

from __future__ import annotations

import numpy as np

from vglobal.admission.fit.index import FloatArray

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
    if n == 0:
        return []
    # One row per child: a round is a few array operations instead of a loop over the children.
    caps, wants, floors = np.vstack(real_caps), np.vstack(demands), np.vstack(guarantees)
    weight = np.array(weights, dtype=np.int64)
    deserved = np.zeros((n, total.shape[0]))
    met = np.zeros(n, dtype=bool)
    remaining = total.copy()
    for _ in range(64 * n):  # converges in far fewer rounds; the bound guards float drift
        active = ~met
        wsum = int(weight[active].sum())
        if wsum == 0:
            break
        old = deserved[active]
        new = old + remaining * (weight[active] / wsum)[:, None]
        new = np.maximum(np.minimum(np.minimum(new, caps[active]), wants[active]), floors[active])
        done = np.all(wants[active] <= new + _EPS, axis=1) | np.all(np.abs(new - old) <= _EPS, axis=1)
        inc = np.maximum(new - old, 0.0).sum(axis=0)
        dec = np.maximum(old - new, 0.0).sum(axis=0)
        deserved[active] = new
        met[active] = done
        left = np.maximum(remaining + dec - inc, 0.0)
        if bool(np.all(left <= _EPS)) or bool(np.all(np.abs(left - remaining) <= _EPS)):
            break
        remaining = left
    return list(deserved)
