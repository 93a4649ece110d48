"""The LeaderWorkerSet controller, reduced to its objects and status: a leader StatefulSet ``<name>``
whose pods ``<name>-<group>`` lead each of ``replicas`` groups, and per group a worker StatefulSet
``<name>-<group>`` owned by its leader pod, with pods ``<name>-<group>-<worker>`` (worker 1 ..
size-1), all labelled with the set's name, group index, worker index and group key as LWS labels
them. Workers come with their leader (startupPolicy LeaderCreated) or once it is Ready
(LeaderReady). A group counts as ready when all its pods are; with the default restart policy a
pod that ends takes its whole group down, and the group is made again."""

from __future__ import annotations

import hashlib

from tests.kubeapi.kinds import PODS, Kind
from tests.kubeapi.store import Obj
from tests.kubeapi.workload_ctl import Ctx, is_active, is_ready, owner_ref, phase, template_hash
from tests.kubeapi.workload_kinds import LEADERWORKERSETS, STATEFULSETS

PREFIX = "leaderworkerset.sigs.k8s.io/"
NAME, GROUP, WORKER, GROUP_KEY = (
    f"{PREFIX}{k}" for k in ("name", "group-index", "worker-index", "group-key")
)
REVISION, SIZE, LEADER = f"{PREFIX}template-revision-hash", f"{PREFIX}size", f"{PREFIX}leader-name"


def _sts(
    ctx: Ctx, owner_kind: Kind, owner: Obj, name: str, labels: dict[str, str], replicas: int
) -> Obj | None:
    existing = next((s for s in ctx.children(STATEFULSETS, owner) if s["metadata"]["name"] == name), None)
    if existing is not None:
        return existing
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels, "ownerReferences": [owner_ref(owner_kind, owner)]},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
        },
    }
    return ctx.create(STATEFULSETS, owner["metadata"]["namespace"], body)


def leaderworkerset(ctx: Ctx, lws: Obj) -> None:
    name, spec = lws["metadata"]["name"], lws.get("spec") or {}
    tmpl = spec.get("leaderWorkerTemplate") or {}
    size = int(tmpl.get("size", 1))
    replicas = int(spec.get("replicas", 1))
    workers_template = tmpl.get("workerTemplate") or {}
    leader_template = tmpl.get("leaderTemplate") or workers_template
    revision = template_hash(tmpl)
    leaders_sts = _sts(ctx, LEADERWORKERSETS, lws, name, {NAME: name}, replicas)
    if leaders_sts is None:
        return
    leaders = {p["metadata"]["name"]: p for p in ctx.children(PODS, leaders_sts)}
    wait_ready = spec.get("startupPolicy") == "LeaderReady"
    ready_groups = 0
    for g in range(replicas):
        key = hashlib.sha1(f"{lws['metadata']['namespace']}/{name}-{g}".encode()).hexdigest()
        group_labels = {NAME: name, GROUP: str(g), GROUP_KEY: key, REVISION: revision}
        leader_name = f"{name}-{g}"
        leader = leaders.get(leader_name)
        if leader is None:
            leader = ctx.create_from_template(
                STATEFULSETS,
                leaders_sts,
                leader_template,
                name=leader_name,
                labels={**group_labels, WORKER: "0", "statefulset.kubernetes.io/pod-name": leader_name},
                annotations={SIZE: str(size)},
                spec_extra={"hostname": leader_name, "subdomain": name},
            )
            if leader is None:
                continue
        if leader["metadata"].get("deletionTimestamp"):
            continue
        workers: list[Obj] = []
        if size > 1 and (not wait_ready or is_ready(leader)):
            worker_sts = _sts(ctx, PODS, leader, leader_name, group_labels, size - 1)
            if worker_sts is None:
                continue
            have = {p["metadata"]["name"]: p for p in ctx.children(PODS, worker_sts)}
            for w in range(1, size):
                pod_name = f"{leader_name}-{w}"
                pod = have.get(pod_name) or ctx.create_from_template(
                    STATEFULSETS,
                    worker_sts,
                    workers_template,
                    name=pod_name,
                    labels={**group_labels, WORKER: str(w), "statefulset.kubernetes.io/pod-name": pod_name},
                    annotations={SIZE: str(size), LEADER: leader_name},
                    spec_extra={"hostname": pod_name, "subdomain": name},
                )
                if pod is not None:
                    workers.append(pod)
        group = [leader, *workers]
        if any(phase(p) in ("Succeeded", "Failed") for p in group):
            ctx.delete(PODS, leader)  # RecreateGroupOnPodRestart: its workers go with it
            continue
        if len(group) == size and all(is_ready(p) and is_active(p) for p in group):
            ready_groups += 1
    status: Obj = {
        "observedGeneration": lws["metadata"].get("generation", 1),
        "replicas": replicas,
        "readyReplicas": ready_groups,
        "updatedReplicas": replicas,
        "hpaPodSelector": f"{NAME}={name},{WORKER}=0",
        "conditions": [
            {
                "type": "Available",
                "status": "True" if ready_groups >= replicas else "False",
                "reason": "AllGroupsReady" if ready_groups >= replicas else "GroupsNotReady",
                "message": "All replicas are ready"
                if ready_groups >= replicas
                else "Replicas are progressing",
            }
        ],
    }
    ctx.set_status(LEADERWORKERSETS, lws, status)


def for_statefulset(ctx: Ctx, sts: Obj) -> None:
    """A change under one of a LeaderWorkerSet's StatefulSets: reconcile the set it belongs to."""
    owner = ctx.store.get(
        LEADERWORKERSETS,
        sts["metadata"].get("namespace", ""),
        (sts["metadata"].get("labels") or {}).get(NAME, ""),
    )
    if owner is not None and not owner["metadata"].get("deletionTimestamp"):
        leaderworkerset(ctx, owner)


RECONCILERS = {LEADERWORKERSETS: leaderworkerset}
