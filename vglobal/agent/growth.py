"""Growing a node pool for a gang the cluster's nodes cannot hold.

The hub admits a gang onto nodes a pool can add (admission counts them); the agent's scheduler
then finds no room, and the agent asks the cluster for the nodes: as many of each pool as the
waiting pods need once today's free capacity is used, packed first-fit decreasing. The gang binds
when they come up, or goes back to the hub when its bind timeout runs out first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vglobal.agent.backends.base import PoolSpec
from vglobal.model.resources import ResourceVector

POD_SLOT = ResourceVector({"pods": 1})


def _first_fit(rows: list[ResourceVector], need: ResourceVector) -> bool:
    for i, free in enumerate(rows):
        if need.fits_in(free):
            rows[i] = free - need
            return True
    return False


def nodes_to_add(
    pods: Sequence[ResourceVector], free: Mapping[str, ResourceVector], pools: Sequence[PoolSpec]
) -> dict[str, int] | None:
    """Per pool, the nodes to add so ``pods`` (requests without the pod slot) all fit beside what
    is free now; {} when they fit already, None when the pools cannot make room."""
    rows = [free[n] for n in sorted(free)]
    added: list[tuple[str, ResourceVector]] = []  # new nodes: (pool, free)
    room = {p.name: p.max - p.current - p.coming for p in pools}
    dims = sorted({k for p in pods for k in p})
    for need in sorted((p + POD_SLOT for p in pods), key=lambda v: [v[k] for k in dims], reverse=True):
        if _first_fit(rows, need):
            continue
        news = [f for _, f in added]
        if _first_fit(news, need):
            added = [(pool, f) for (pool, _), f in zip(added, news, strict=True)]
            continue
        fitting = (p for p in pools if room[p.name] > 0 and need.fits_in(p.allocatable))
        pool = min(fitting, key=lambda p: p.name, default=None)
        if pool is None:
            return None
        room[pool.name] -= 1
        added.append((pool.name, pool.allocatable - need))
    out: dict[str, int] = {}
    for pool_name, _ in added:
        out[pool_name] = out.get(pool_name, 0) + 1
    return out
