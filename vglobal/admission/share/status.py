"""Per-queue figures of a cycle, for ListQueues, ExplainJob and the metrics exporter."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from operator import attrgetter

from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.share.tree import UNLIMITED, QueueTree
from vglobal.admission.share.usage import Usage, dominant_share
from vglobal.admission.snapshot import QueueStatus, Snapshot
from vglobal.model.resources import ResourceVector

_QUEUE = attrgetter("queue")


def queue_statuses(
    tree: QueueTree,
    snapshot: Snapshot,
    jobs: Sequence[int],
    admitted_now: Sequence[int],
    index: ResourceIndex,
    vector: Callable[[Sequence[float]], ResourceVector] | None = None,
) -> dict[str, QueueStatus]:
    """Every queue and root: usage after this cycle's admissions; pending = still waiting after it.

    `jobs` and `admitted_now` count, per queue's own jobs, the snapshot's pending jobs and those
    admitted this cycle. `vector` is index.vector or what stands for it (a memo of it: memo.py).
    """
    vector = index.vector if vector is None else vector
    n = len(tree.names)
    admitted = list(admitted_now)
    pending = [j - a for j, a in zip(jobs, admitted, strict=True)]
    running = [0] * n
    for queue, count in Counter(map(_QUEUE, snapshot.running)).items():
        q = tree.idx.get(queue)
        if q is not None:
            running[q] += count
    for i in reversed(tree.order):
        p = tree.parent[i]
        if p >= 0:
            pending[p] += pending[i]
            running[p] += running[i]
            admitted[p] += admitted[i]
    usage = _rolled_usage(tree, snapshot)
    half_life = snapshot.policy.fair_share_half_life
    out: dict[str, QueueStatus] = {}
    for i, name in enumerate(tree.names):
        cap = tree.real_cap[i].tolist()
        deserved = vector(tree.deserved[i].tolist())
        out[name] = QueueStatus(
            name=name,
            allocated=vector(tree.alloc[i]),
            deserved=deserved,
            real_capability=None
            if all(c >= UNLIMITED for c in cap)
            else vector([c if c < UNLIMITED else 0 for c in cap]),
            guarantee=vector(tree.guarantee[i]),
            pending=pending[i],
            running=running[i] + admitted[i],
            admitted=admitted[i],
            request=vector(tree.demand[i].tolist()),
            usage=usage[i],
            usage_share=dominant_share(usage[i], deserved, half_life),
        )
    return out


def _rolled_usage(tree: QueueTree, snapshot: Snapshot) -> list[Usage]:
    """Per tree node: the decayed usage of its own and its descendants' jobs (none without a half-life)."""
    out: list[Usage] = [{} for _ in tree.names]
    if snapshot.policy.fair_share_half_life <= 0:
        return out
    for q in snapshot.queues:
        i = tree.idx.get(q.name)
        if i:
            out[i] = dict(q.usage)
    for i in reversed(tree.order):
        p = tree.parent[i]
        if p >= 0:
            acc = out[p]
            for r, u in out[i].items():
                acc[r] = acc.get(r, 0.0) + u
    return out
