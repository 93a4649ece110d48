"""nodegroup: a queue's nodeGroupAffinity / AntiAffinity confines its jobs to node groups
(node label ``volcano.sh/nodegroup-name``) and scores preferred groups higher."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vglobal.scheduler.framework import NodeFilter, Plugin
from vglobal.scheduler.info import QueueInfo, TaskInfo
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
        masks: dict[str, list[NodeFilter]] = {}
        scores: dict[str, FloatArray] = {}

        def predicate(task: TaskInfo) -> list[NodeFilter]:
            queue = task.job.queue
            cached = masks.get(queue)
            if cached is None:
                cached = masks[queue] = _filters(groups, affinities.get(queue), strict)
            return cached

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

        ssn.add_predicate_fn(self.name, predicate)
        ssn.add_node_order_fn(self.name, one, batch)


def _filters(groups: list[str | None], aff: GroupAffinity | None, strict: bool) -> list[NodeFilter]:
    labelled = np.array([g is not None for g in groups], dtype=np.bool_)
    if aff is None:
        # no affinity: only unlabelled nodes, and only when not strict
        ok = ~labelled if not strict else np.zeros(len(groups), dtype=np.bool_)
        return [NodeFilter(LABEL_NOT_FOUND if not strict else AFFINITY_NOT_FOUND, ok)]
    admitted = np.array([g is not None and aff.admits(g) for g in groups], dtype=np.bool_)
    return [NodeFilter(LABEL_NOT_FOUND, labelled), NodeFilter(UNSATISFIED, admitted)]


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
