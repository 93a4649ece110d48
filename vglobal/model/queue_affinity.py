"""A Queue's ``spec.affinity``: the node groups (node label ``volcano.sh/nodegroup-name``) its jobs
may use (nodeGroupAffinity) and may not (nodeGroupAntiAffinity), each as hard (required) and soft
(preferred) lists of group names, as Volcano's nodegroup plugin reads them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field, StrictStr

from vglobal.model.errors import Problems
from vglobal.model.k8s import Model
from vglobal.model.resources import ResourceVector

NODE_GROUP_LABEL = "volcano.sh/nodegroup-name"
# The cluster label an agent registers with when its scheduler runs the nodegroup predicate:
# "strict" or "lenient" (strict: false), how it treats queues that name no node group.
NODE_GROUP_MODE_LABEL = "vglobal.io/nodegroup-plugin"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class NodeGroupTerms(Model):
    required_during_scheduling_ignored_during_execution: list[StrictStr] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[StrictStr] = Field(default_factory=list)


class AffinitySpec(Model):
    node_group_affinity: NodeGroupTerms | None = None
    node_group_anti_affinity: NodeGroupTerms | None = None


@dataclass(frozen=True)
class QueueAffinity:
    """Group names in the order written (a preferred list may be scored by position)."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """No group named: Volcano treats the queue as one without affinity."""
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)

    def admits(self, group: str | None) -> bool:
        """Whether a node of ``group`` (None: unlabelled) passes the nodegroup predicate for a queue
        with this (non-empty) affinity: in an affinity list and not in the required anti-affinity,
        or in the preferred anti-affinity (a soft anti-affinity still admits, it scores lowest)."""
        if group is None:
            return False
        if group in self.anti_preferred:
            return True
        if group in self.anti_required:
            return False
        return group in self.required or group in self.preferred

    def groups_text(self) -> str:
        """The groups a node must be in, for explanations."""
        allowed = sorted({*self.required, *self.preferred, *self.anti_preferred})
        text = f"node groups {', '.join(allowed)}" if allowed else "no node group"
        if self.anti_required:
            text += f" (not {', '.join(sorted(self.anti_required))})"
        return text

    def to_manifest(self) -> dict[str, Any]:
        """The ``spec.affinity`` document (as the nodegroup plugin reads it)."""
        out: dict[str, Any] = {}
        for key, req, pref in (
            ("nodeGroupAffinity", self.required, self.preferred),
            ("nodeGroupAntiAffinity", self.anti_required, self.anti_preferred),
        ):
            if req or pref:
                out[key] = {REQUIRED: list(req), PREFERRED: list(pref)}
        return out


_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _names(p: Problems, where: str, names: list[str]) -> tuple[str, ...]:
    """Node group names are label values: at most 63 of letters, digits, "-", "_", "."."""
    for i, name in enumerate(names):
        if len(name) > 63 or not _LABEL_VALUE.match(name):
            p.add(
                f"{where}[{i}]",
                f'invalid node group "{name}": must be a label value (letters, digits, "-", "_", "."; '
                "starting and ending with a letter or digit; at most 63 characters)",
            )
    return tuple(dict.fromkeys(names))


def _terms(p: Problems, where: str, terms: NodeGroupTerms | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if terms is None:
        return (), ()
    return (
        _names(p, f"{where}.{REQUIRED}", terms.required_during_scheduling_ignored_during_execution),
        _names(p, f"{where}.{PREFERRED}", terms.preferred_during_scheduling_ignored_during_execution),
    )


def affinity_of(p: Problems, spec: AffinitySpec | None) -> QueueAffinity | None:
    """The parsed affinity (None when the queue sets none); bad group names go to ``p``."""
    if spec is None:
        return None
    required, preferred = _terms(p, "spec.affinity.nodeGroupAffinity", spec.node_group_affinity)
    anti_required, anti_preferred = _terms(
        p, "spec.affinity.nodeGroupAntiAffinity", spec.node_group_anti_affinity
    )
    return QueueAffinity(required, preferred, anti_required, anti_preferred)


def affinity_from_manifest(manifest: Mapping[str, Any]) -> QueueAffinity | None:
    """The affinity of a stored (already validated) Queue manifest."""
    raw = (manifest.get("spec") or {}).get("affinity")
    if raw is None:
        return None
    return affinity_of(Problems(), AffinitySpec.model_validate(raw))


NODE_GROUP_LIMITS = "volcano.sh/nodegroup-resource-limits"
LIMITS_FIELD = f'metadata.annotations["{NODE_GROUP_LIMITS}"]'


def node_group_limits(raw: str) -> dict[str, dict[str, str]]:
    """The annotation's per node group resource lists, as written (a quantity per resource it
    limits; others are not limited); ValueError says what is wrong. Volcano's nodegroup plugin
    checks allocated(queue, group) + the task's request against it."""
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError("expected a JSON object of node group -> {resource: quantity}")
    out: dict[str, dict[str, str]] = {}
    for group, resources in doc.items():
        if not isinstance(resources, dict):
            raise ValueError(f"{group}: expected an object of resource -> quantity")
        for name, value in resources.items():
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise ValueError(f"{group}.{name}: expected a quantity, got {value!r}")
        out[str(group)] = {str(k): str(v) for k, v in resources.items()}
    return out


def limit_vectors(annotations: Mapping[str, Any]) -> dict[str, ResourceVector]:
    """The annotation's limits in canonical units ({} when the queue sets none; a stored queue's
    annotation was checked on apply)."""
    raw = annotations.get(NODE_GROUP_LIMITS)
    if not raw:
        return {}
    try:
        return {g: ResourceVector.from_quantities(r) for g, r in node_group_limits(str(raw)).items()}
    except ValueError:
        return {}
