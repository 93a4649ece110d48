"""Kthena's ModelServing controller, reduced to the pods it makes and the status it writes: per
ServingGroup ``<name>-<g>`` and per replica ``r`` of each role, the entry pod
``<name>-<g>-<role>-<r>-0`` and ``workerReplicas`` workers ``...-<r>-<w>``, labelled as Kthena
labels them (``modelserving.volcano.sh/name``, ``group-name``, ``role``, ``role-id``, ``entry``).
A missing pod is made again; ``availableReplicas`` counts the groups whose pods are all ready, and
``Available`` holds once all are. No PodGroups, services, rolling updates or restarts."""

from __future__ import annotations

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.kinds import PODS
from tests.kubeapi.store import Obj
from tests.kubeapi.workload_ctl import Ctx, is_active, is_ready
from tests.kubeapi.workload_kinds import MODELSERVINGS

LABEL = "modelserving.volcano.sh"


def modelserving(ctx: Ctx, ms: Obj) -> None:
    meta, spec = ms["metadata"], ms.get("spec") or {}
    have = {p["metadata"]["name"]: p for p in ctx.children(PODS, ms) if is_active(p)}
    groups = int(spec.get("replicas", 1))
    available = 0
    for g in range(groups):
        group = f"{meta['name']}-{g}"
        ready = True
        for role in (spec.get("template") or {}).get("roles") or []:
            rname = str(role.get("name", ""))
            for r in range(int(role.get("replicas", 1))):
                for w in range(1 + int(role.get("workerReplicas", 0))):
                    name = f"{group}-{rname}-{r}-{w}"
                    pod = have.get(name)
                    if pod is None:
                        template = role.get("entryTemplate") if w == 0 else role.get("workerTemplate")
                        labels = {
                            f"{LABEL}/name": meta["name"],
                            f"{LABEL}/group-name": group,
                            f"{LABEL}/role": rname,
                            f"{LABEL}/role-id": f"{rname}-{r}",
                            **({f"{LABEL}/entry": "true"} if w == 0 else {}),
                        }
                        pod = ctx.create_from_template(MODELSERVINGS, ms, template, labels=labels, name=name)
                    ready = ready and pod is not None and is_ready(pod)
        available += ready
    status: Obj = {"replicas": groups, "availableReplicas": available}
    if groups and available == groups:
        status["conditions"] = [
            {
                "type": "Available",
                "status": "True",
                "reason": "AllGroupsReady",
                "lastTransitionTime": rfc3339(),
            }
        ]
    old = ms.get("status") or {}
    if status.get("conditions") and old.get("conditions"):
        status["conditions"] = old["conditions"]  # its transition time stays
    ctx.set_status(MODELSERVINGS, ms, status)


RECONCILERS = {MODELSERVINGS: modelserving}
