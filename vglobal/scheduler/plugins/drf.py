"""drf: dominant resource fairness between jobs (and, with enableHierarchy, between queues)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.scheduler.framework import PERMIT, EventHandler, Plugin
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import IntArray
from vglobal.scheduler.session import Session

_TOLERANCE = 1e-6
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"


def dominant_share(allocated: IntArray, total: IntArray) -> float:
    """max_r alloc_r / total_r over the dimensions the cluster has."""
    mask = total > 0
    if not mask.any():
        return 0.0
    return float(np.max(allocated[mask] / total[mask]))


class _Attr:
    __slots__ = ("allocated", "share")

    def __init__(self, allocated: IntArray, share: float) -> None:
        self.allocated = allocated
        self.share = share


class DrfPlugin(Plugin[Session]):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total
        attrs: dict[str, _Attr] = {}
        for job in ssn.jobs.values():
            alloc = job.allocated.copy()
            attrs[job.uid] = _Attr(alloc, dominant_share(alloc, total))
        self.attrs = attrs

        def order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = attrs[left.uid].share, attrs[right.uid].share
            return 0 if ls == rs else (-1 if ls < rs else 1)

        ssn.add_job_order_fn(self.name, order)

        def victims(preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], int]:
            latt = attrs[preemptor.job.uid]
            ls = dominant_share(latt.allocated + preemptor.req, total)
            examined: dict[str, IntArray] = {}
            out = []
            for t in preemptees:
                ratt = attrs[t.job.uid]
                taken = examined.get(t.job.uid)
                taken = t.req.copy() if taken is None else taken + t.req
                examined[t.job.uid] = taken
                rs = dominant_share(ratt.allocated - taken, total)
                if ls < rs or abs(ls - rs) <= _TOLERANCE:
                    out.append(t)
            return out, PERMIT

        ssn.add_preemptable_fn(self.name, victims)

        if self.option.flags.get("enableHierarchy") is True:  # off unless set, as in Volcano
            self._open_hierarchy(ssn, attrs)

        def on_allocate(task: TaskInfo) -> None:
            attr = attrs[task.job.uid]
            attr.allocated += task.req
            attr.share = dominant_share(attr.allocated, total)

        def on_deallocate(task: TaskInfo) -> None:
            attr = attrs[task.job.uid]
            attr.allocated -= task.req
            attr.share = dominant_share(attr.allocated, total)

        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))

    def _open_hierarchy(self, ssn: Session, attrs: dict[str, _Attr]) -> None:
        """Queues compared by share/weight along their ``volcano.sh/hierarchy`` paths."""
        total = ssn.total
        queue_alloc: dict[str, IntArray] = {}
        for job in ssn.jobs.values():
            q = queue_alloc.setdefault(job.queue, np.zeros(len(ssn.index), dtype=np.int64))
            q += attrs[job.uid].allocated

        def path(queue: QueueInfo) -> list[tuple[str, float]]:
            names = [p for p in queue.spec.annotations.get(HIERARCHY, "").split("/") if p]
            weights = [w for w in queue.spec.annotations.get(HIERARCHY_WEIGHTS, "").split("/") if w]
            out = []
            for i in range(len(names)):
                try:
                    weight = float(weights[i])
                except (IndexError, ValueError):
                    weight = 1.0
                out.append(("/".join(names[: i + 1]), max(weight, 1e-9)))
            return out or [(queue.name, float(max(queue.weight, 1)))]

        queue_request: dict[str, IntArray] = {}
        for job in ssn.jobs.values():
            r = queue_request.setdefault(job.queue, np.zeros(len(ssn.index), dtype=np.int64))
            r += job.total_request

        def subtree(prefix: str, amounts: dict[str, IntArray]) -> IntArray:
            out = np.zeros(len(ssn.index), dtype=np.int64)
            for name, vec in amounts.items():
                q = ssn.queues.get(name)
                if q is not None and any(p == prefix for p, _ in path(q)):
                    out += vec
            return out

        def saturated(prefix: str) -> bool:
            """Everything the subtree asks for is allocated (then it yields to demanding ones)."""
            request = subtree(prefix, queue_request)
            dims = request > 0
            return bool(dims.any() and (subtree(prefix, queue_alloc)[dims] >= request[dims]).all())

        def order(left: QueueInfo, right: QueueInfo) -> int:
            """Walk both hierarchy paths from the root; the first level that differs decides."""
            lp, rp = path(left), path(right)
            for (ln, lw), (rn, rw) in zip(lp, rp, strict=False):
                if ln == rn:
                    continue
                lsat, rsat = saturated(ln), saturated(rn)
                if lsat != rsat:
                    return 1 if lsat else -1
                ls = dominant_share(subtree(ln, queue_alloc), total) / lw
                rs = dominant_share(subtree(rn, queue_alloc), total) / rw
                if ls != rs:
                    return -1 if ls < rs else 1
                return 0
            return 0

        ssn.add_queue_order_fn(self.name, order)

        def on_allocate(task: TaskInfo) -> None:
            queue_alloc.setdefault(task.job.queue, np.zeros(len(ssn.index), dtype=np.int64))
            queue_alloc[task.job.queue] += task.req

        def on_deallocate(task: TaskInfo) -> None:
            queue_alloc[task.job.queue] -= task.req

        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))
