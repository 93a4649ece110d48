"""Kubernetes matching rules used by predicates and scores: selectors, node affinity, taints."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vglobal.model.label_selector import match_expression
from vglobal.scheduler.api import Taint

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def match_term(term: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    """A NodeSelectorTerm: all matchExpressions and matchFields; an empty term matches nothing."""
    exprs: Sequence[Mapping[str, Any]] = term.get("matchExpressions") or ()
    fields: Sequence[Mapping[str, Any]] = term.get("matchFields") or ()
    if not exprs and not fields:
        return False
    if not all(match_expression(e, labels) for e in exprs):
        return False
    return all(match_expression(f, {"metadata.name": node_name}) for f in fields)


def required_affinity_terms(affinity: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]] | None:
    if not affinity:
        return None
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return None
    terms: Sequence[Mapping[str, Any]] = required.get("nodeSelectorTerms") or ()
    return terms


def preferred_affinity_terms(affinity: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    if not affinity:
        return ()
    node_affinity = affinity.get("nodeAffinity") or {}
    terms: Sequence[Mapping[str, Any]] = (
        node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return terms


def match_node_selector_and_affinity(
    selector: Mapping[str, str],
    affinity: Mapping[str, Any] | None,
    labels: Mapping[str, str],
    node_name: str,
) -> bool:
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    terms = required_affinity_terms(affinity)
    if terms is None:
        return True
    return any(match_term(t, labels, node_name) for t in terms)


def preferred_affinity_score(
    affinity: Mapping[str, Any] | None, labels: Mapping[str, str], node_name: str
) -> int:
    """k8s NodeAffinity Score: the sum of the weights of matching preferred terms."""
    score = 0
    for term in preferred_affinity_terms(affinity):
        weight = int(term.get("weight", 0))
        if weight and match_term(term.get("preference") or {}, labels, node_name):
            score += weight
    return score


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if key and key != taint.key:
        return False
    if op == "Exists":
        return True
    if not key:  # an empty key only makes sense with Exists
        return False
    return str(toleration.get("value") or "") == taint.value


def untolerated(
    taints: Iterable[Taint], tolerations: Sequence[Mapping[str, Any]], effects: frozenset[str]
) -> int:
    """Number of taints with one of ``effects`` that no toleration covers."""
    return sum(1 for t in taints if t.effect in effects and not any(tolerates(x, t) for x in tolerations))
