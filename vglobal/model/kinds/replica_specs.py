"""What Kubeflow's job kinds share (PyTorchJob's ``pytorchReplicaSpecs``, MPIJob's
``mpiReplicaSpecs``): one task per replica type, named as the operator labels its pods
(``training.kubeflow.org/replica-type``, lower case), the gang all of their replicas unless
``runPolicy.schedulingPolicy.minAvailable`` says fewer; the scheduling policy's queue and priority
class name the job's, as the operator writes them into Volcano's PodGroup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import Tasks, count, dig, whole_gang


def read_replica_specs(
    tasks: Tasks, base: str, spec: Mapping[str, Any], field: str, types: tuple[str, ...]
) -> None:
    """``types``: the replica types the operator knows, in the order it starts them."""
    specs = spec.get(field)
    if not isinstance(specs, Mapping) or not specs:
        tasks.p.add(f"{base}.{field}", f"required: at least one of {', '.join(types)}")
        return
    for name in specs:
        if name not in types:
            tasks.p.add(f"{base}.{field}.{name}", f"unknown replica type: one of {', '.join(types)}")
    policy = dig(spec, "runPolicy", "schedulingPolicy") or {}
    policy_at = f"{base}.runPolicy.schedulingPolicy"
    gang = policy.get("minAvailable")
    for name in (t for t in types if t in specs):
        where = f"{base}.{field}.{name}"
        rs = specs[name]
        if not isinstance(rs, Mapping):
            tasks.p.add(where, "must be a mapping")
            continue
        replicas = count(tasks.p, f"{where}.replicas", rs.get("replicas"), 1)
        source = f"{policy_at}.minAvailable" if gang is not None else f"{where}.replicas (all replicas)"
        tasks.add(name.lower(), f"{where}.template", rs.get("template"), replicas, replicas, gang_from=source)
    if gang is not None:
        least = count(tasks.p, f"{policy_at}.minAvailable", gang, 1)
        whole_gang(tasks, f"{policy_at}.minAvailable", max(least, 1))
    if isinstance(policy.get("queue"), str) and policy["queue"]:
        tasks.queue = policy["queue"]
    if isinstance(policy.get("priorityClass"), str) and policy["priorityClass"]:
        tasks.priority = policy["priorityClass"]
