"""Kubernetes label matching: a selector requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) and
a LabelSelector (matchLabels and matchExpressions), shared by the scheduler and admission."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def match_expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One requirement: In, NotIn, Exists, DoesNotExist, Gt, Lt."""
    key = str(expr.get("key", ""))
    op = str(expr.get("operator", "In"))
    values = [str(v) for v in expr.get("values") or ()]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, want = _int(labels[key]), _int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector: all matchLabels and matchExpressions; a null selector selects nothing."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(match_expression(e, labels) for e in selector.get("matchExpressions") or ())
