"""Required pod anti-affinity as the hub's admission checks it: the terms of a gang's pods against the
labels of pods already running (the agent's predicates check it in full; pod_affinity.py there).

A term selects a pod when its ``labelSelector`` matches the pod's labels (matchLabels and
matchExpressions; a null selector selects nothing) and the pod is in the term's ``namespaces``, in
any namespace with an empty ``namespaceSelector``, else in the owner's namespace. A running pod a
term selects closes to the gang every node sharing its node's value of the term's topologyKey.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.model.label_selector import selects

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
# Labels the agent's job controller puts on every pod of a task (besides its template's and the
# per-pod volcano.sh/task-index).
JOB_NAME, JOB_NAMESPACE, TASK_SPEC = "volcano.sh/job-name", "volcano.sh/job-namespace", "volcano.sh/task-spec"


@dataclass(frozen=True)
class AntiTerm:
    selector: str  # the labelSelector as canonical JSON ("null": selects nothing)
    topology_key: str
    namespaces: tuple[str, ...] = ()  # empty: the owner's namespace (unless any_namespace)
    any_namespace: bool = False  # namespaceSelector: {}

    @classmethod
    def of(cls, term: Mapping[str, Any]) -> AntiTerm:
        ns_selector = term.get("namespaceSelector")
        return cls(
            json.dumps(term.get("labelSelector"), sort_keys=True),
            str(term.get("topologyKey") or ""),
            tuple(str(n) for n in term.get("namespaces") or ()),
            ns_selector == {},
        )

    def selects(self, owner_namespace: str, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether the term of a pod in ``owner_namespace`` selects a pod in ``namespace`` with
        ``labels``."""
        if not self.any_namespace:
            if self.namespaces:
                if namespace not in self.namespaces:
                    return False
            elif namespace != owner_namespace:
                return False
        selector: Mapping[str, Any] | None = json.loads(self.selector)
        return selects(selector, labels)


def anti_terms(pod_specs: Iterable[Mapping[str, Any] | None]) -> tuple[AntiTerm, ...]:
    """The distinct required anti-affinity terms of these pod specs (a gang's task templates)."""
    raw: list[Any] = []
    for spec in pod_specs:
        anti = ((spec or {}).get("affinity") or {}).get("podAntiAffinity") or {}
        raw += anti.get(REQUIRED) or ()
    return terms_of(raw)


def terms_of(raw: Iterable[Any]) -> tuple[AntiTerm, ...]:
    """The distinct terms of these raw term documents, in their order."""
    return tuple(dict.fromkeys(AntiTerm.of(t) for t in raw if isinstance(t, Mapping)))


def task_pod_labels(
    job: str, namespace: str, task: str, template: Mapping[str, str] | None
) -> dict[str, str]:
    """The labels every pod of a task carries on its cluster."""
    return {**(template or {}), JOB_NAME: job, JOB_NAMESPACE: namespace, TASK_SPEC: task}


def template_labels(template: Mapping[str, Any] | None) -> dict[str, str]:
    """The labels a pod template gives its pods."""
    labels = ((template or {}).get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()}
