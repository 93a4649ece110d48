"""Deployment, ReplicaSet, StatefulSet and batch/v1 Job controllers, reduced to what creates pods and
reports them: a Deployment owns one ReplicaSet per template (``<name>-<pod-template-hash>``), a
ReplicaSet keeps ``replicas`` active pods (``<rs>-xxxxx``), a StatefulSet keeps ``<name>-<i>``
(OrderedReady: the next pod only once the previous is Ready; Parallel: all at once) and replaces
finished ones, a Job runs ``parallelism`` pods until ``completions`` succeeded or ``backoffLimit``
failures. No rolling updates, surge, PVCs or pod disruption accounting."""

from __future__ import annotations

from typing import Any

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.kinds import PODS
from tests.kubeapi.store import Obj
from tests.kubeapi.workload_ctl import Ctx, is_active, is_ready, owner_ref, phase, template_hash
from tests.kubeapi.workload_kinds import DEPLOYMENTS, JOBS, REPLICASETS, STATEFULSETS

DEFAULT_BACKOFF_LIMIT = 6


def _spec(obj: Obj) -> dict[str, Any]:
    return obj.get("spec") or {}


def _replicas(obj: Obj) -> int:
    value = _spec(obj).get("replicas")
    return 1 if value is None else int(value)


def _template_labels(obj: Obj) -> dict[str, str]:
    return dict(((_spec(obj).get("template") or {}).get("metadata") or {}).get("labels") or {})


def deployment(ctx: Ctx, dep: Obj) -> None:
    template = _spec(dep).get("template") or {}
    pth = template_hash(template)
    name = f"{dep['metadata']['name']}-{pth}"
    sets = ctx.children(REPLICASETS, dep)
    current = next((rs for rs in sets if rs["metadata"]["name"] == name), None)
    for rs in sets:
        if rs is not current:
            ctx.delete(REPLICASETS, rs)  # no rolling update: the old template's pods go at once
    if current is None:
        labels = {**_template_labels(dep), "pod-template-hash": pth}
        selector = dict((_spec(dep).get("selector") or {}).get("matchLabels") or {})
        body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {"deployment.kubernetes.io/revision": "1"},
                "ownerReferences": [owner_ref(DEPLOYMENTS, dep)],
            },
            "spec": {
                "replicas": _replicas(dep),
                "selector": {"matchLabels": {**selector, "pod-template-hash": pth}},
                "template": {**template, "metadata": {**(template.get("metadata") or {}), "labels": labels}},
            },
        }
        current = ctx.create(REPLICASETS, dep["metadata"]["namespace"], body)
        if current is None:
            return
    elif _replicas(current) != _replicas(dep):
        ctx.update_spec(REPLICASETS, current, {**_spec(current), "replicas": _replicas(dep)})
    rs_status = current.get("status") or {}
    want, ready = _replicas(dep), int(rs_status.get("readyReplicas", 0))
    status: Obj = {
        "observedGeneration": dep["metadata"].get("generation", 1),
        "replicas": int(rs_status.get("replicas", 0)),
        "updatedReplicas": int(rs_status.get("replicas", 0)),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            {
                "type": "Available",
                "status": "True" if ready >= want else "False",
                "reason": "MinimumReplicasAvailable" if ready >= want else "MinimumReplicasUnavailable",
            }
        ],
    }
    if ready < want:
        status["unavailableReplicas"] = want - ready
    ctx.set_status(DEPLOYMENTS, dep, status)


def replicaset(ctx: Ctx, rs: Obj) -> None:
    pods = ctx.children(PODS, rs)
    active = [p for p in pods if is_active(p)]
    want = _replicas(rs)
    template = _spec(rs).get("template") or {}
    for _ in range(want - len(active)):
        pod = ctx.create_from_template(
            REPLICASETS, rs, template, labels={}, generate_name=f"{rs['metadata']['name']}-"
        )
        if pod is not None:
            active.append(pod)
    for extra in reversed(active[want:]):  # the newest go first
        ctx.delete(PODS, extra)
    active = active[:want]
    ready = sum(1 for p in active if is_ready(p))
    ctx.set_status(
        REPLICASETS,
        rs,
        {
            "observedGeneration": rs["metadata"].get("generation", 1),
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": ready,
        },
    )


def statefulset(ctx: Ctx, sts: Obj) -> None:
    if (sts["metadata"].get("labels") or {}).get("leaderworkerset.sigs.k8s.io/name"):
        from tests.kubeapi import ctl_lws

        ctl_lws.for_statefulset(ctx, sts)  # a LeaderWorkerSet's own: its controller makes those pods
        return
    name, spec = sts["metadata"]["name"], _spec(sts)
    template = spec.get("template") or {}
    revision = f"{name}-{template_hash(template)}"
    want = _replicas(sts)
    by_name = {p["metadata"]["name"]: p for p in ctx.children(PODS, sts)}
    ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
    for i in range(want):
        pod_name = f"{name}-{i}"
        pod = by_name.get(pod_name)
        if pod is not None and phase(pod) in ("Succeeded", "Failed"):
            ctx.delete(PODS, pod)  # replaced once gone
            pod = None
        if pod is None and pod_name not in by_name:
            created = ctx.create_from_template(
                STATEFULSETS,
                sts,
                template,
                name=pod_name,
                labels={
                    "controller-revision-hash": revision,
                    "statefulset.kubernetes.io/pod-name": pod_name,
                    "apps.kubernetes.io/pod-index": str(i),
                },
                spec_extra={"hostname": pod_name, "subdomain": spec.get("serviceName", "")},
            )
            if created is not None:
                by_name[pod_name] = created
            pod = created
        if ordered and (pod is None or not is_ready(pod)):
            break  # OrderedReady: pod i+1 waits until pod i is Running and Ready
    for pod_name, pod in by_name.items():
        if pod_name.rsplit("-", 1)[-1].isdigit() and int(pod_name.rsplit("-", 1)[-1]) >= want:
            ctx.delete(PODS, pod)
    live = [p for p in by_name.values() if is_active(p)]
    ready = sum(1 for p in live if is_ready(p))
    ctx.set_status(
        STATEFULSETS,
        sts,
        {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": len(live),
            "updatedReplicas": len(live),
            "currentRevision": revision,
            "updateRevision": revision,
        },
    )


def _condition(type_: str, reason: str, message: str = "") -> Obj:
    now = rfc3339()
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }


def job(ctx: Ctx, jb: Obj) -> None:
    meta, spec = jb["metadata"], _spec(jb)
    old = jb.get("status") or {}
    pods = ctx.children(PODS, jb)
    succeeded = sum(1 for p in pods if phase(p) == "Succeeded")
    failed = sum(1 for p in pods if phase(p) == "Failed")
    active = [p for p in pods if is_active(p)]
    finished = any(c.get("type") in ("Complete", "Failed") for c in old.get("conditions") or [])
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    backoff = int(spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT))
    conditions = list(old.get("conditions") or [])
    if not finished:
        if failed > backoff:
            conditions += [
                _condition(
                    "FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
                ),
                _condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
            ]
            finished = True
        elif (completions is None and succeeded > 0 and not active) or (
            completions is not None and succeeded >= int(completions)
        ):
            conditions += [
                _condition("SuccessCriteriaMet", "CompletionsReached"),
                _condition("Complete", "CompletionsReached"),
            ]
            finished = True
    if finished:
        for p in active:
            ctx.delete(PODS, p)
        active = []
    elif not spec.get("suspend"):
        remaining = parallelism if completions is None else min(parallelism, int(completions) - succeeded)
        done_indexes = {_index(p) for p in pods if phase(p) == "Succeeded"} | {_index(p) for p in active}
        for _ in range(remaining - len(active)):
            labels = {
                "batch.kubernetes.io/controller-uid": meta["uid"],
                "controller-uid": meta["uid"],
                "batch.kubernetes.io/job-name": meta["name"],
                "job-name": meta["name"],
            }
            notes: dict[str, str] = {}
            if spec.get("completionMode") == "Indexed":
                index = next(i for i in range(10**6) if str(i) not in done_indexes)
                done_indexes.add(str(index))
                labels["batch.kubernetes.io/job-completion-index"] = str(index)
                notes["batch.kubernetes.io/job-completion-index"] = str(index)
            pod = ctx.create_from_template(
                JOBS,
                jb,
                spec.get("template"),
                labels=labels,
                annotations=notes,
                generate_name=f"{meta['name']}-",
            )
            if pod is not None:
                active.append(pod)
    status: Obj = {
        "active": len(active),
        "ready": sum(1 for p in active if is_ready(p)),
        "succeeded": succeeded,
        "failed": failed,
        "startTime": old.get("startTime") or rfc3339(),
    }
    if conditions:
        status["conditions"] = conditions
    if any(c["type"] == "Complete" for c in conditions):
        status["completionTime"] = old.get("completionTime") or rfc3339()
    ctx.set_status(JOBS, jb, status)


def _index(pod: Obj) -> str:
    return str((pod["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-completion-index", ""))


RECONCILERS = {DEPLOYMENTS: deployment, REPLICASETS: replicaset, STATEFULSETS: statefulset, JOBS: job}
