"""capacity: queues get their spec ``deserved`` (capped by capability, lifted to guarantee) and
may borrow up to their real capability; flat, or as a tree with ``enableHierarchy``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.scheduler import quota
from vglobal.scheduler.framework import PERMIT, REJECT, EventHandler, Plugin
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.plugins.proportion import QueueAttr, collect_usage
from vglobal.scheduler.quota import Vec
from vglobal.scheduler.session import Session

ROOT = "root"


class CapacityAttr(QueueAttr):
    __slots__ = ("ancestors", "children", "has_deserved", "parent", "spec_deserved")

    def __init__(self, queue: QueueInfo, ssn: Session) -> None:
        super().__init__(queue, ssn)
        self.spec_deserved = quota.from_mapping(ssn.index, queue.spec.deserved, 0)
        self.has_deserved = bool(queue.spec.deserved)
        self.parent: str | None = None
        self.children: list[str] = []
        self.ancestors: list[str] = []  # nearest first, root last

    def update_share(self) -> None:
        if quota.is_empty(self.deserved):
            self.share = 1.0
        else:
            self.share = quota.share(self.allocated, self.deserved)


class CapacityPlugin(Plugin[Session]):
    name = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        # Unlike the other flags, hierarchy is off unless the conf sets it (Volcano's HierarchyEnabled).
        self.hierarchy = self.option.flags.get("enableHierarchy") is True
        index = ssn.index
        total = ssn.total.copy()
        attrs: dict[str, CapacityAttr] = {name: CapacityAttr(q, ssn) for name, q in ssn.queues.items()}
        if self.hierarchy and ROOT not in attrs:
            from vglobal.scheduler.api import QueueSpec

            attrs[ROOT] = CapacityAttr(QueueInfo(QueueSpec(ROOT, parent=None)), ssn)
        for job in ssn.jobs.values():
            if job.queue in attrs:
                collect_usage(ssn, attrs, job)  # type: ignore[arg-type]
        self.attrs = attrs
        if self.hierarchy:
            self._build_tree(ssn, attrs, total)
        else:
            total_guarantee = sum((a.guarantee for a in attrs.values()), quota.zeros(index))
            for attr in attrs.values():
                attr.real_capability = np.minimum(
                    quota.pos(total - total_guarantee) + attr.guarantee, attr.capability
                )
                attr.deserved = np.maximum(
                    np.minimum(attr.spec_deserved, attr.real_capability), attr.guarantee
                )
        for attr in attrs.values():
            attr.update_share()
        self._register(ssn, attrs)

    def _build_tree(self, ssn: Session, attrs: dict[str, CapacityAttr], total: Vec) -> None:
        for name, attr in attrs.items():
            if name == ROOT:
                continue
            queue = ssn.queues.get(name)
            parent = (queue.parent if queue is not None else None) or ROOT
            if parent not in attrs or parent == name:
                parent = ROOT
            attr.parent = parent
            attrs[parent].children.append(name)
        for name, attr in attrs.items():
            seen = {name}
            p = attr.parent
            while p is not None and p not in seen:
                attr.ancestors.append(p)
                seen.add(p)
                p = attrs[p].parent
        # usage rolls up to every ancestor
        for attr in list(attrs.values()):
            if attr.children:
                continue
            for a in attr.ancestors:
                attrs[a].allocated += attr.allocated
                attrs[a].request += attr.request
                attrs[a].inqueue += attr.inqueue
                attrs[a].elastic += attr.elastic
        root = attrs[ROOT]
        children = [attrs[c] for c in root.children]
        root.guarantee = sum((c.guarantee for c in children), np.zeros_like(total))
        root.deserved = sum((c.spec_deserved for c in children), np.zeros_like(total))
        root.real_capability = np.minimum(root.capability, total)
        root.deserved = np.minimum(root.deserved, root.real_capability)

        def descend(parent: CapacityAttr) -> None:
            kids = [attrs[c] for c in sorted(parent.children)]
            guarantee = sum((k.guarantee for k in kids), np.zeros_like(total))
            for kid in kids:
                kid.capability = np.where(
                    quota.is_unlimited(kid.capability), parent.capability, kid.capability
                )
                kid.real_capability = np.minimum(
                    quota.pos(parent.real_capability - guarantee) + kid.guarantee, kid.capability
                )
                kid.deserved = np.maximum(np.minimum(kid.spec_deserved, kid.real_capability), kid.guarantee)
                descend(kid)

        descend(root)

    def _chain(self, attrs: dict[str, CapacityAttr], name: str) -> list[CapacityAttr]:
        attr = attrs[name]
        if not self.hierarchy:
            return [attr]
        return [attr, *(attrs[a] for a in attr.ancestors if a != ROOT)]

    def _register(self, ssn: Session, attrs: dict[str, CapacityAttr]) -> None:
        """The session's closures over this session's queue figures: queue order, what a queue
        may allocate, enqueue and preempt (here), reclaim and usage (``_register_reclaim``)."""
        hierarchy = self.hierarchy

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            la, ra = attrs[left.name], attrs[right.name]
            if hierarchy:
                la, ra = _split_point(attrs, la, ra)
                lq, rq = ssn.queues.get(la.name), ssn.queues.get(ra.name)
                lp = lq.priority if lq else 0
                rp = rq.priority if rq else 0
            else:
                lp, rp = left.priority, right.priority
            if lp != rp:
                return -1 if lp > rp else 1
            if la.share != ra.share:
                return -1 if la.share < ra.share else 1
            if la.has_deserved != ra.has_deserved:
                return -1 if la.has_deserved else 1
            return 0

        ssn.add_queue_order_fn(self.name, queue_order)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if queue.state != "Open":
                return False
            attr = attrs.get(queue.name)
            if attr is None:
                return True
            if hierarchy and attr.children:
                return False
            dims = task.req > 0
            return all(
                quota.le_on(a.allocated + task.req, a.real_capability, dims)
                for a in self._chain(attrs, queue.name)
            )

        ssn.add_allocatable_fn(self.name, allocatable)

        def preemptive(queue: QueueInfo, task: TaskInfo) -> bool:
            attr = attrs.get(queue.name)
            if attr is None:
                return True
            future = attr.allocated + task.req
            if not quota.le_on(future, attr.real_capability, task.req > 0):
                return False
            dims = (task.req > 0) & ~((future <= 0) & (attr.deserved <= 0))
            return bool(np.any((future <= attr.deserved)[dims]))

        ssn.add_preemptive_fn(self.name, preemptive)

        def enqueueable(job: JobInfo) -> int:
            queue = ssn.queues[job.queue]
            attr = attrs.get(job.queue)
            if queue.state != "Open" or (hierarchy and attr is not None and attr.children):
                return REJECT
            min_req = job.min_resources
            if attr is None or not min_req.any():
                return PERMIT
            dims = min_req > 0
            for a in self._chain(attrs, job.queue):
                if not quota.le_on(min_req + a.allocated + a.inqueue - a.elastic, a.real_capability, dims):
                    return REJECT
            return PERMIT

        ssn.add_job_enqueueable_fn(self.name, enqueueable)

        def enqueued(job: JobInfo) -> None:
            for a in self._chain(attrs, job.queue) if job.queue in attrs else ():
                a.inqueue += job.min_resources

        ssn.add_job_enqueued_fn(self.name, enqueued)
        self._register_reclaim(ssn, attrs)

    def _register_reclaim(self, ssn: Session, attrs: dict[str, CapacityAttr]) -> None:
        """Which tasks other queues may take back, and the usage kept as tasks come and go."""
        hierarchy = self.hierarchy
        pods = ssn.index.col["pods"]

        def reclaimable(reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = []
            allocations: dict[str, Vec] = {}
            wanted = reclaimer.req > 0
            wanted[pods] = False
            for t in reclaimees:
                attr = attrs[t.job.queue]
                allocated = allocations.setdefault(t.job.queue, attr.allocated.copy())
                has = t.req > 0
                has[pods] = False
                if not np.any(has & wanted):
                    continue
                if not quota.le(attr.guarantee, allocated - t.req):
                    continue
                defined = has & (attr.deserved > 0)
                if not defined.any() or np.any((allocated > attr.deserved) & defined):
                    victims.append(t)
                    allocated -= t.req
            return victims, PERMIT

        ssn.add_reclaimable_fn(self.name, reclaimable)

        if hierarchy:

            def victim_queue_order(left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
                ld = _lca_depth(attrs, left.name, preemptor.name)
                rd = _lca_depth(attrs, right.name, preemptor.name)
                return 0 if ld == rd else (-1 if ld > rd else 1)

            ssn.add_victim_queue_order_fn(self.name, victim_queue_order)

        def on_allocate(task: TaskInfo) -> None:
            if task.job.queue in attrs:
                for a in self._chain(attrs, task.job.queue):
                    a.allocated += task.req
                    a.update_share()

        def on_deallocate(task: TaskInfo) -> None:
            if task.job.queue in attrs:
                for a in self._chain(attrs, task.job.queue):
                    a.allocated -= task.req
                    a.update_share()

        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))


def _path(attrs: dict[str, CapacityAttr], name: str) -> list[str]:
    return [*reversed(attrs[name].ancestors), name]


def _split_point(
    attrs: dict[str, CapacityAttr], left: CapacityAttr, right: CapacityAttr
) -> tuple[CapacityAttr, CapacityAttr]:
    """The two ancestors just below the common ancestor of ``left`` and ``right``."""
    lp, rp = _path(attrs, left.name), _path(attrs, right.name)
    for a, b in zip(lp, rp, strict=False):
        if a != b:
            return attrs[a], attrs[b]
    return left, right


def _lca_depth(attrs: dict[str, CapacityAttr], a: str, b: str) -> int:
    depth = 0
    for x, y in zip(_path(attrs, a), _path(attrs, b), strict=False):
        if x != y:
            break
        depth += 1
    return depth
