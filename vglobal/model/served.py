"""Which API resource a job's manifest is written as in a member cluster, and the cluster label
by which an agent says whether its cluster serves that resource (``served`` or ``missing``).

A Volcano Job has none: the agent makes its pods itself. For the other kinds a controller in the
member cluster makes the pods, and a cluster whose API lacks the kind's CRD cannot run it, so
admission does not send such a job there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds import WORKLOADS, on_define

SERVED_LABEL_PREFIX = "workloads.vglobal.io/"
SERVED, MISSING = "served", "missing"

# (apiVersion, kind) -> "<plural>.<group>", the resource's name as its CRD is named
RESOURCES: dict[tuple[str, str], str] = {k.key: k.resource for k in WORKLOADS}
on_define(lambda k: RESOURCES.__setitem__(k.key, k.resource))


# The resources whose pods come in groups, each placed whole (a job of one is evicted whole only).
GROUPED = frozenset(k.resource for k in WORKLOADS if k.grouped)


def resource_of(raw: Mapping[str, Any]) -> str:
    """The resource a manifest is written as ("" for a Volcano Job, whose pods the agent makes)."""
    return RESOURCES.get((str(raw.get("apiVersion", "")), str(raw.get("kind", ""))), "")


def served_label(resource: str) -> str:
    return f"{SERVED_LABEL_PREFIX}{resource}"


def lacks(labels: Mapping[str, str], resource: str) -> bool:
    """The cluster's agent said its API does not serve ``resource`` (no label: not known to lack it)."""
    return bool(resource) and labels.get(served_label(resource)) == MISSING


def kinds_served(labels: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The workload kinds a cluster runs and those it cannot, by its agent's labels: a Volcano Job
    always runs (its agent makes the pods); a kind whose label is absent counts as served, as
    admission takes it."""
    ok, missing = ["batch.volcano.sh/v1alpha1 Job"], list[str]()
    for (api_version, kind), resource in RESOURCES.items():
        (missing if lacks(labels, resource) else ok).append(f"{api_version} {kind}")
    return ok, missing
