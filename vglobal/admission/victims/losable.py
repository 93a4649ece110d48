"""Volcano's reclaimable rule for one victim queue: whether it may lose a pod, or a whole job pod by
pod, against its deserved and guarantee (proportion's and capacity's checks), and the deserved it is
judged by. Shared by the pod and whole-job reclaim planners and their victim walk."""

from __future__ import annotations

from collections.abc import Sequence

from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.share.tree import QueueTree


def set_deserved(tree: QueueTree, index: ResourceIndex) -> list[list[int]]:
    """Per queue, its deserved as it sets it (Volcano's capacity plugin: what it does not name, it
    does not deserve), else as water-filling gives it; exact ints."""
    return [
        [int(x) for x in (d.tolist() if s.deserved is None else index.known_row(s.deserved))]
        for s, d in zip(tree.snaps, tree.deserved, strict=True)
    ]


def may_lose(
    alloc: list[int],
    pod: list[int],
    deserved: Sequence[int],
    guarantee: Sequence[int],
    slots: int,
    short: Sequence[bool],
) -> bool:
    """Whether a queue allocated `alloc` may lose the pod: its guarantee holds without it, and it is
    above deserved on a resource the pod uses that the reclaimer is short of (`short`, see
    Reclaims.short), or its deserved names none of the pod's resources."""
    if any(a - x < g for a, x, g in zip(alloc, pod, guarantee, strict=True) if g > 0):
        return False
    relevant = [r for r, x in enumerate(pod) if x > 0 and r != slots and deserved[r] > 0]
    return not relevant or any(alloc[r] > deserved[r] and short[r] for r in relevant)


def may_lose_whole(
    alloc: list[int],
    charge: list[int],
    last: list[int],
    deserved: Sequence[int],
    guarantee: Sequence[int],
    slots: int,
    short: Sequence[bool],
) -> bool:
    """Whether a queue allocated `alloc` may lose a whole job of `charge`, its pods one by one as
    Volcano's gang reclaim checks a whole victim's tasks: each goes while the queue, without those
    before it, is still above its deserved (may_lose), so the binding check is the one for its
    last pod (`last`, its smallest), after all the others are gone. The queue keeps its
    guarantee without the whole job."""
    if any(a - x < g for a, x, g in zip(alloc, charge, guarantee, strict=True) if g > 0):
        return False
    before = [a - x + z for a, x, z in zip(alloc, charge, last, strict=True)]
    return may_lose(before, last, deserved, [0] * len(deserved), slots, short)
