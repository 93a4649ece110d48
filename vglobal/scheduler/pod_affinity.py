"""Required inter-pod affinity and anti-affinity (the k8s InterPodAffinity filter).

A node fails for a task when
1. one of the task's required affinity terms finds no matching pod in the node's topology domain
   (the node's value of the term's topologyKey; a node without that label fails), unless no pod
   anywhere matches all the terms and the task matches them itself (the first of a series);
2. one of the task's required anti-affinity terms finds a matching pod in the node's domain;
3. a pod already placed has a required anti-affinity term that matches the task and shares the
   node's domain for that term's key.
Pods "placed" are the session's tasks on nodes, those released this session excepted. A term
selects pods in its ``namespaces``, else in its owner's namespace; an empty ``namespaceSelector``
means every namespace (namespace labels are not known here, so a non-empty one adds none).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from vglobal.model.label_selector import selects
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.framework import NodeFilter
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import BoolArray, NodeTable

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Term = Mapping[str, Any]


def required_terms(affinity: Mapping[str, Any] | None, kind: str) -> Sequence[Term]:
    """``kind`` is podAffinity or podAntiAffinity."""
    if not affinity:
        return ()
    terms: Sequence[Term] = (affinity.get(kind) or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or ()
    return terms


def has_pod_affinity(affinity: Mapping[str, Any] | None) -> bool:
    return bool(required_terms(affinity, "podAffinity") or required_terms(affinity, "podAntiAffinity"))


def term_matches(term: Term, owner_namespace: str, task: TaskInfo) -> bool:
    """Whether the term of a pod in ``owner_namespace`` selects ``task``."""
    namespaces = term.get("namespaces") or ()
    ns_selector = term.get("namespaceSelector")
    if ns_selector == {}:
        pass  # every namespace
    elif namespaces:
        if task.namespace not in namespaces:
            return False
    elif (ns_selector is None and task.namespace != owner_namespace) or ns_selector:
        return False
    return selects(term.get("labelSelector"), task.spec.labels)


def _placed(node_tasks: Sequence[Mapping[str, TaskInfo]], skip: TaskInfo) -> Iterator[tuple[int, TaskInfo]]:
    for row, tasks in enumerate(node_tasks):
        for t in tasks.values():
            if t is not skip and t.status != TaskStatus.Releasing:
                yield row, t


def filters(
    nodes: NodeTable, node_tasks: Sequence[Mapping[str, TaskInfo]], task: TaskInfo
) -> list[NodeFilter]:
    """The failing conditions 1-3 for ``task`` over all nodes (none when nothing applies)."""
    labels = nodes.labels
    affinity = required_terms(task.spec.affinity, "podAffinity")
    anti = required_terms(task.spec.affinity, "podAntiAffinity")
    ns = task.namespace
    # per (topology key, value): pods matching all affinity terms / each anti term; existing pods'
    # anti terms matching the task
    aff_count: dict[tuple[str, str], int] = {}
    anti_pairs: set[tuple[str, str]] = set()
    existing_pairs: set[tuple[str, str]] = set()
    for row, other in _placed(node_tasks, task):
        node_labels = labels[row]
        if affinity and all(term_matches(t, ns, other) for t in affinity):
            for t in affinity:
                key = t.get("topologyKey") or ""
                if key in node_labels:
                    pair = (key, node_labels[key])
                    aff_count[pair] = aff_count.get(pair, 0) + 1
        for t in anti:
            key = t.get("topologyKey") or ""
            if key in node_labels and term_matches(t, ns, other):
                anti_pairs.add((key, node_labels[key]))
        for t in required_terms(other.spec.affinity, "podAntiAffinity"):
            key = t.get("topologyKey") or ""
            if key in node_labels and term_matches(t, other.namespace, task):
                existing_pairs.add((key, node_labels[key]))
    out: list[NodeFilter] = []
    if existing_pairs:
        ok = _rows(labels, lambda lab: not any(lab.get(k) == v for k, v in existing_pairs))
        out.append(NodeFilter(EXISTING_ANTI_AFFINITY, ok, unresolvable=False))
    if affinity:
        first = not aff_count and all(term_matches(t, ns, task) for t in affinity)
        keys = [t.get("topologyKey") or "" for t in affinity]

        def satisfied(lab: Mapping[str, str]) -> bool:
            if not all(k in lab for k in keys):
                return False
            return first or all(aff_count.get((k, lab[k]), 0) > 0 for k in keys)

        out.append(NodeFilter(AFFINITY_MISMATCH, _rows(labels, satisfied)))
    if anti_pairs:
        ok = _rows(labels, lambda lab: not any(lab.get(k) == v for k, v in anti_pairs))
        out.append(NodeFilter(ANTI_AFFINITY_MISMATCH, ok, unresolvable=False))
    return out


def _rows(labels: Sequence[Mapping[str, str]], test: Any) -> BoolArray:
    return np.fromiter((bool(test(lab)) for lab in labels), dtype=np.bool_, count=len(labels))
