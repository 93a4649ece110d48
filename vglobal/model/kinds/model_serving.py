"""Kthena's ModelServing (``workload.serving.volcano.sh/v1alpha1``): ``spec.replicas`` ServingGroups,
each a gang of its roles placed whole, as Kthena gives each ServingGroup a PodGroup of its own. A
role (prefill, decode...) is ``replicas`` entry pods (task ``<role>``) and ``workerReplicas``
workers for each (task ``<role>-worker``); a group's gang is every role's pods, or the
``gangPolicy.minRoleReplicas`` of a role. The group's network topology is
``template.networkTopology.groupPolicy``. Long-running."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import Tasks, WorkloadManifest, count, dig, workload_reader
from vglobal.model.kinds.record import WorkloadKind
from vglobal.model.network_topology import NetworkTopologySpec, build_network_topology


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    groups = count(tasks.p, f"{base}.replicas", spec.get("replicas"), 1)
    at = f"{base}.template"
    roles = dig(spec, "template", "roles")
    if not isinstance(roles, list) or not roles:
        tasks.p.add(f"{at}.roles", "required: at least one role")
        return
    least = dig(spec, "template", "gangPolicy", "minRoleReplicas") or {}
    names = [str(r.get("name") or "") for r in roles if isinstance(r, Mapping)]
    for name in least if isinstance(least, Mapping) else ():
        if name not in names:
            tasks.p.add(
                f"{at}.gangPolicy.minRoleReplicas.{name}",
                f"no role {name!r}: the roles are {', '.join(names)}",
            )
    each = f"of each of the {base}.replicas ServingGroups"
    for i, role in enumerate(roles):
        where = f"{at}.roles[{i}]"
        if not isinstance(role, Mapping):
            tasks.p.add(where, "must be a mapping")
            continue
        name = str(role.get("name") or "")
        replicas = count(tasks.p, f"{where}.replicas", role.get("replicas"), 1)
        workers = count(tasks.p, f"{where}.workerReplicas", role.get("workerReplicas"), 0)
        gang, source = replicas, f"{where}.replicas {each}"
        if isinstance(least, Mapping) and name in least:
            gang = min(
                count(tasks.p, f"{at}.gangPolicy.minRoleReplicas.{name}", least[name], replicas), replicas
            )
            source = f"{at}.gangPolicy.minRoleReplicas.{name} {each}"
        tasks.add(
            name,
            f"{where}.entryTemplate",
            role.get("entryTemplate"),
            groups * replicas,
            gang,
            name_at=f"{where}.name",
            gang_from=source,
            group_pods=replicas,
        )
        if workers:
            tasks.add(
                f"{name}-worker",
                f"{where}.workerTemplate",
                role.get("workerTemplate"),
                groups * replicas * workers,
                gang * workers,
                gang_from=f"{where}.workerReplicas {workers} per entry, {source}",
                group_pods=replicas * workers,
            )
    policy = dig(spec, "template", "networkTopology", "groupPolicy")
    if isinstance(policy, Mapping):
        tier = policy.get("highestTierAllowed")
        tasks.topology = build_network_topology(
            tasks.p,
            f"{at}.networkTopology.groupPolicy",
            NetworkTopologySpec(
                mode=str(policy.get("mode") or "hard"),
                highest_tier_allowed=tier if isinstance(tier, int) and not isinstance(tier, bool) else None,
            ),
        )


KIND = WorkloadKind(
    "workload.serving.volcano.sh/v1alpha1",
    "ModelServing",
    "modelservings",
    "modelserving.workload.serving.volcano.sh",
    workload_reader(_read),
    WorkloadManifest,
    order=23,
    long_running=True,
    grouped=True,
)
