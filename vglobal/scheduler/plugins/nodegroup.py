"""nodegroup: a queue's nodeGroupAffinity / AntiAffinity confines its jobs to node groups
(node label ``volcano.sh/nodegroup-name``) and scores preferred groups higher."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vglobal.model.queue_affinity import NODE_GROUP_LIMITS, node_group_limits
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.framework import EventHandler, NodeFilter, Plugin
from vglobal.scheduler.info import ALLOCATED_STATUS, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import FloatArray, IntArray
from vglobal.scheduler.session import Session

NODE_GROUP_LABEL = "volcano.sh/nodegroup-name"
ROOT = "root"
BASE_SCORE = 100.0
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
LABEL_NOT_FOUND = "node(s) have no node group label"
AFFINITY_NOT_FOUND = "queue has no node group affinity"
UNSATISFIED = "node(s) didn't satisfy the queue's node group affinity"
LIMIT_INVALID = "node group resource limit annotation invalid"
LIMIT_EXCEEDED = "node group resource limit exceeded"


@dataclass(frozen=True)
class GroupAffinity:
    required: tuple[str, ...]
    preferred: tuple[str, ...]  # in conf order (enablePreferredOrder scores by position)
    anti_required: frozenset[str]
    anti_preferred: frozenset[str]

    @staticmethod
    def parse(raw: Mapping[str, Any] | None) -> GroupAffinity | None:
        if raw is None:
            return None
        aff = raw.get("nodeGroupAffinity") or {}
        anti = raw.get("nodeGroupAntiAffinity") or {}
        return GroupAffinity(
            tuple(aff.get(_REQUIRED) or ()),
            tuple(aff.get(_PREFERRED) or ()),
            frozenset(anti.get(_REQUIRED) or ()),
            frozenset(anti.get(_PREFERRED) or ()),
        )

    @property
    def unset(self) -> bool:
        """No group named: Volcano's plugin treats the queue as one without affinity."""
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    def admits(self, group: str) -> bool:
        ok = group in self.required or group in self.preferred
        if group in self.anti_required:
            ok = False
        if group in self.anti_preferred:
            ok = True  # a soft anti-affinity still admits the group (it only scores -1)
        return ok

    def score(self, group: str, preferred_order: bool) -> float:
        score = 0.0
        if group in self.required:
            score += BASE_SCORE
        if group in self.preferred:
            if preferred_order:
                n = len(self.preferred)
                score += 0.5 * BASE_SCORE * (n - self.preferred.index(group)) / n
            else:
                score += 0.5 * BASE_SCORE
        if group in self.anti_preferred:
            score = -1.0
        return score


class NodeGroupPlugin(Plugin[Session]):
    name = "nodegroup"

    def on_session_open(self, ssn: Session) -> None:
        strict = self.arg_bool("strict", True)
        preferred_order = self.arg_bool("enablePreferredOrder", False)
        affinities = {name: GroupAffinity.parse(q.spec.affinity) for name, q in ssn.queues.items()}
        if self.option.flags.get("enableHierarchy") is True:
            affinities = {name: _inherit(ssn.queues, affinities, name) for name in affinities}
        groups = [labels.get(NODE_GROUP_LABEL) for labels in ssn.nodes.labels]
        limits = {
            name: GroupLimits.of(name, q.spec.annotations, ssn, groups) for name, q in ssn.queues.items()
        }
        masks: dict[str, list[NodeFilter]] = {}
        scores: dict[str, FloatArray] = {}

        def predicate(task: TaskInfo) -> list[NodeFilter]:
            queue = task.job.queue
            cached = masks.get(queue)
            if cached is None:
                cached = masks[queue] = _filters(groups, affinities.get(queue), strict)
            limit = limits.get(queue)
            return cached if limit is None else [*cached, limit.filter(task)]

        def queue_scores(task: TaskInfo) -> FloatArray:
            queue = task.job.queue
            cached = scores.get(queue)
            if cached is None:
                aff = affinities.get(queue)
                cached = np.array(
                    [
                        aff.score(g, preferred_order) if aff is not None and g is not None else 0.0
                        for g in groups
                    ],
                    dtype=np.float64,
                )
                scores[queue] = cached
            return cached

        def batch(task: TaskInfo, rows: IntArray) -> FloatArray:
            out: FloatArray = queue_scores(task)[rows]
            return out

        def one(task: TaskInfo, row: int) -> float:
            aff, group = affinities.get(task.job.queue), groups[row]
            return aff.score(group, preferred_order) if aff is not None and group is not None else 0.0

        def allocated(task: TaskInfo, sign: int) -> None:
            limit = limits.get(task.job.queue)
            if limit is not None:
                limit.add(task, sign)

        ssn.add_predicate_fn(self.name, predicate)
        if any(g is not None for g in groups):  # else every node scores 0: nothing to add
            ssn.add_node_order_fn(self.name, one, batch)
        if any(v is not None for v in limits.values()):
            ssn.add_event_handler(EventHandler(lambda t: allocated(t, 1), lambda t: allocated(t, -1)))


class GroupLimits:
    """A queue's ``volcano.sh/nodegroup-resource-limits``: per node group, what its tasks may hold
    there (the resources the annotation names); a task fails the nodes of a group where what the
    queue holds plus its request would pass the limit. An annotation that does not parse fails
    every node, as in Volcano (the hub refuses such a Queue)."""

    def __init__(self, groups: list[str | None], index_size: int) -> None:
        self.groups = groups
        self.limit: dict[str, tuple[IntArray, IntArray]] = {}  # group -> (columns, amounts)
        self.used: dict[str, IntArray] = {}
        self.at: dict[str, str] = {}  # task uid -> the group its request is counted in
        self.invalid = False
        self.size = index_size

    @classmethod
    def of(
        cls, queue: str, annotations: Mapping[str, str], ssn: Session, groups: list[str | None]
    ) -> GroupLimits | None:
        raw = annotations.get(NODE_GROUP_LIMITS)
        if not raw:
            return None
        out = cls(groups, len(ssn.index))
        try:
            for group, resources in node_group_limits(raw).items():
                vec = ResourceVector.from_quantities(resources)
                cols = [c for n in vec if (c := ssn.index.col.get(n)) is not None]
                amounts = [vec[ssn.index.names[c]] for c in cols]
                out.limit[group] = (np.array(cols, dtype=np.int64), np.array(amounts, dtype=np.int64))
        except ValueError:  # also a bad quantity
            out.invalid = True
            return out
        for job in ssn.jobs.values():
            if job.queue == queue:
                for task in job.tasks.values():
                    if task.status in ALLOCATED_STATUS:
                        out.add(task, 1)
        return out

    def add(self, task: TaskInfo, sign: int) -> None:
        """Count the task's request in its node's group (sign 1) or take it out again (-1)."""
        if sign > 0:
            group = self.groups[task.row] if task.row is not None else None
            if group is None:
                return
            self.at[task.uid] = group
        else:
            got = self.at.pop(task.uid, None)
            if got is None:
                return
            group = got
        used = self.used.get(group)
        if used is None:
            used = self.used[group] = np.zeros(self.size, dtype=np.int64)
        used += sign * task.req

    def filter(self, task: TaskInfo) -> NodeFilter:
        if self.invalid:
            return NodeFilter(LIMIT_INVALID, np.zeros(len(self.groups), dtype=np.bool_))
        over = {
            g
            for g, (cols, amounts) in self.limit.items()
            if (
                (self.used.get(g, np.zeros(self.size, dtype=np.int64))[cols] + task.req[cols]) > amounts
            ).any()
        }
        return NodeFilter(LIMIT_EXCEEDED, np.array([g not in over for g in self.groups], dtype=np.bool_))


def _filters(groups: list[str | None], aff: GroupAffinity | None, strict: bool) -> list[NodeFilter]:
    """Volcano's predicate: a node without the group label passes only a queue without affinity
    when not strict; a labelled node passes only a queue with affinity that admits its group."""
    labelled = np.array([g is not None for g in groups], dtype=np.bool_)
    if aff is None or aff.unset:
        if strict:
            return [NodeFilter(LABEL_NOT_FOUND, labelled), NodeFilter(AFFINITY_NOT_FOUND, ~labelled)]
        # not strict: the nodes outside every group (on a cluster without groups, all: no filter)
        return [NodeFilter(AFFINITY_NOT_FOUND, ~labelled)] if labelled.any() else []
    admitted = np.array([g is not None and aff.admits(g) for g in groups], dtype=np.bool_)
    return [NodeFilter(LABEL_NOT_FOUND, labelled), NodeFilter(UNSATISFIED, admitted | ~labelled)]


def _inherit(
    queues: Mapping[str, QueueInfo], affinities: Mapping[str, GroupAffinity | None], name: str
) -> GroupAffinity | None:
    """A queue without affinity takes its nearest ancestor's (parent defaults to root)."""
    seen = {name}
    current: str | None = name
    while current is not None:
        aff = affinities.get(current)
        if aff is not None:
            return aff
        if current == ROOT:
            return None
        queue = queues.get(current)
        parent = (queue.parent if queue is not None else None) or ROOT
        if parent in seen:
            return None
        seen.add(parent)
        current = parent if parent in queues else None
    return None
