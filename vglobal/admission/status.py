"""Per-queue figures of a cycle, for ListQueues, ExplainJob and the metrics exporter."""

from __future__ import annotations

from collections.abc import Mapping

from vglobal.admission.index import ResourceIndex
from vglobal.admission.snapshot import Admit, QueueStatus, Snapshot, Wait
from vglobal.admission.tree import QueueTree


def queue_statuses(
    tree: QueueTree, snapshot: Snapshot, decisions: Mapping[str, Admit | Wait], index: ResourceIndex
) -> dict[str, QueueStatus]:
    """Every queue and root: usage after this cycle's admissions; pending = still waiting after it."""
    n = len(tree.names)
    pending = [0] * n
    running = [0] * n
    admitted = [0] * n
    for job in snapshot.pending:
        q = tree.idx.get(job.queue)
        if q is None:
            continue
        if isinstance(decisions.get(job.uid), Admit):
            admitted[q] += 1
        else:
            pending[q] += 1
    for run in snapshot.running:
        q = tree.idx.get(run.queue)
        if q is not None:
            running[q] += 1
    for i in reversed(tree.order):
        p = tree.parent[i]
        if p >= 0:
            pending[p] += pending[i]
            running[p] += running[i]
            admitted[p] += admitted[i]
    out: dict[str, QueueStatus] = {}
    for i, name in enumerate(tree.names):
        cap = tree.real_cap[i].tolist()
        out[name] = QueueStatus(
            name=name,
            allocated=index.vector(tree.alloc[i]),
            deserved=index.vector(tree.deserved[i].tolist()),
            real_capability=None
            if all(c == float("inf") for c in cap)
            else index.vector([c if c != float("inf") else 0 for c in cap]),
            guarantee=index.vector(tree.guarantee[i]),
            pending=pending[i],
            running=running[i] + admitted[i],
            admitted=admitted[i],
        )
    return out
