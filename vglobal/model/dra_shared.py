"""A ResourceClaim named directly by pods (``resourceClaimName``) is ONE allocation: its devices are
charged once for the job, on the first pod of the first task naming it, and every pod naming it
must run on the node its devices are on (node-local devices, as kube-scheduler requires).

Volcano Job templates get a label and a required pod affinity on ``kubernetes.io/hostname`` per
shared claim, so the agent's scheduler (and kube-scheduler) put them together: the first pod
anywhere it fits, the others beside it."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from vglobal.model.dra import shared_claims
from vglobal.model.resources import EMPTY, ResourceVector

LABEL_PREFIX = "claim.vglobal.io/"
HOSTNAME = "kubernetes.io/hostname"


def claim_label(claim: str) -> str:
    """The label key marking the pods that share ``claim`` (a label name holds 63 characters)."""
    if len(claim) <= 63:
        return f"{LABEL_PREFIX}{claim}"
    return f"{LABEL_PREFIX}{claim[:46]}-{hashlib.sha256(claim.encode()).hexdigest()[:16]}"


def first_pod_charges(shared: Iterable[Mapping[str, ResourceVector]]) -> list[ResourceVector]:
    """Per task (their shared claims, in task order): the devices its first pod carries, those of
    the claims no earlier task names."""
    seen: set[str] = set()
    out = []
    for claims in shared:
        extra = EMPTY
        for name, devices in sorted(claims.items()):
            if name not in seen:
                seen.add(name)
                extra = extra + devices
        out.append(extra)
    return out


def co_located(template: Mapping[str, Any], claims: Iterable[str]) -> dict[str, Any]:
    """``template`` with, per shared claim, its label and a required pod affinity to the pods
    carrying it on the same node."""
    out = copy.deepcopy(dict(template))
    names = sorted(claims)
    if not names:
        return out
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **{claim_label(n): "shared" for n in names}}
    spec = out.setdefault("spec", {})
    affinity = spec.setdefault("affinity", {})
    pod_affinity = affinity.setdefault("podAffinity", {})
    terms = pod_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
    for n in names:
        terms.append({"labelSelector": {"matchLabels": {claim_label(n): "shared"}}, "topologyKey": HOSTNAME})
    return out


def charge_once(
    tasks: tuple[Any, ...], sources: Mapping[tuple[str, str], ResourceVector], *, place: bool
) -> tuple[Any, ...]:
    """The job's tasks with each shared claim charged on one pod (``Task.first_pod_extra``) and,
    with ``place``, their templates co-located on the claim's node."""
    shared = [shared_claims((t.template or {}).get("spec"), sources) for t in tasks]
    if not any(shared):
        return tasks
    out = []
    for task, claims, extra in zip(tasks, shared, first_pod_charges(shared), strict=True):
        changes: dict[str, Any] = {"first_pod_extra": extra, "shared_claims": tuple(sorted(claims))}
        if place and claims:
            changes["template"] = co_located(task.template, claims)
        out.append(replace(task, **changes))
    return tuple(out)
