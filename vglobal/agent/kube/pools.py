"""Node pools of a Kubernetes cluster that grow on demand, and how the agent asks for their nodes.

A pool is named in the agent's ``--node-pools`` file (its new node's shape, its maximum and how long a
node takes to come up); its nodes are those labelled ``karpenter.sh/nodepool`` or
``vglobal.io/node-pool`` with its name. When a gang needs nodes a pool can add, the agent asks the
cluster: a ProvisioningRequest (``autoscaling.x-k8s.io/v1beta1``, with a PodTemplate per task of the
gang's waiting pods, owned by the job's owner object) where the API server serves them; else the
pods it creates carry the scheduling gate ``vglobal.io/provisioning``, for a provisioner that acts
on gated pending pods, and the gate is lifted just before each pod is bound. (The Cluster
Autoscaler and Karpenter act only on pods kube-scheduler marked unschedulable: with them, serve
ProvisioningRequests.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vglobal.agent.backends.base import JobProblem, PoolSpec
from vglobal.agent.kube import paths
from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.agent.kube.bodies import AGENT, MANAGED_BY, JobRef, owner_reference
from vglobal.agent.kube.informer import Change, Informer
from vglobal.agent.kube.records import JOB_UID_LABEL, NodeRecord, node_record
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.agent.pods import PodManifest
from vglobal.model.duration import parse_duration
from vglobal.model.resources import ResourceVector

log = logging.getLogger(__name__)

POOL_LABELS = ("karpenter.sh/nodepool", "vglobal.io/node-pool")  # a node's pool, first found wins
GATE = "vglobal.io/provisioning"
PROVISIONING_API = "/apis/autoscaling.x-k8s.io/v1beta1"
PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
ALL_REQUESTS = f"{PROVISIONING_API}/provisioningrequests"
OURS = f"{MANAGED_BY}={AGENT}"
_TEMPLATE_SPEC = (
    "containers",
    "initContainers",
    "nodeSelector",
    "affinity",
    "tolerations",
    "priorityClassName",
)


@dataclass(frozen=True)
class PoolConfig:
    """One pool of the ``--node-pools`` file."""

    name: str
    node: NodeRecord  # a new node's shape, read as a Node object of the cluster would be
    max: int
    provision_seconds: float


def parse_pools(doc: Any, where: str) -> tuple[PoolConfig, ...]:
    """``{pools: [{name, max, provisionDelay, allocatable, labels}]}``; ValueError naming the field."""
    if not isinstance(doc, dict) or not isinstance(doc.get("pools"), list):
        raise ValueError(f"{where}: expected a list under pools")
    out: list[PoolConfig] = []
    for i, p in enumerate(doc["pools"]):
        at = f"{where}: pools[{i}]"
        if not isinstance(p, dict):
            raise ValueError(f"{at}: expected a mapping")
        unknown = sorted(set(p) - {"name", "max", "provisionDelay", "allocatable", "labels"})
        if unknown:
            raise ValueError(f"{at}.{unknown[0]}: unknown field")
        name = p.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{at}.name: required")
        if any(c.name == name for c in out):
            raise ValueError(f'{at}.name: duplicate pool "{name}"')
        top = p.get("max")
        if not isinstance(top, int) or isinstance(top, bool) or top < 0:
            raise ValueError(f"{at}.max: must be an integer >= 0")
        try:
            delay = parse_duration(str(p.get("provisionDelay", "0s")))
        except ValueError as exc:
            raise ValueError(f"{at}.provisionDelay: {exc}") from None
        if delay < 0:
            raise ValueError(f"{at}.provisionDelay: must be >= 0")
        alloc, labels = p.get("allocatable"), p.get("labels") or {}
        if not isinstance(alloc, dict) or not alloc:
            raise ValueError(f"{at}.allocatable: required, e.g. {{cpu: '32', memory: 256Gi}}")
        if not isinstance(labels, dict):
            raise ValueError(f"{at}.labels: expected a mapping")
        alloc = {"pods": "110", **{str(k): str(v) for k, v in alloc.items()}}
        node = {
            "metadata": {"name": f"{name}-new", "labels": {str(k): str(v) for k, v in labels.items()}},
            "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
        }
        try:
            ResourceVector.from_quantities(alloc)
        except ValueError as exc:
            raise ValueError(f"{at}.allocatable: {exc}") from None
        out.append(PoolConfig(name, node_record(node), top, delay))
    return tuple(out)


def load_pools(path: Path) -> tuple[PoolConfig, ...]:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"--node-pools {path}: {exc}") from exc
    return parse_pools(doc, f"--node-pools {path}")


def pool_of(labels: Mapping[str, str]) -> str | None:
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), None)


def provisioning_served(api: KubeApi) -> bool:
    """Whether the API server serves ProvisioningRequests (the cluster autoscaler's CRD)."""
    try:
        doc = api.request("GET", PROVISIONING_API)
    except ApiError as exc:
        if exc.status in (403, 404):
            return False
        raise
    return any(r.get("name") == "provisioningrequests" for r in doc.get("resources") or [])


def _meta(ref: JobRef, owner_uid: str, name: str) -> dict[str, Any]:
    """Owned by the job's owner object when it exists already (the agent deletes them itself too)."""
    meta: dict[str, Any] = {"name": name, "labels": ref.labels()}
    if owner_uid:
        meta["ownerReferences"] = [owner_reference(ref, owner_uid)]
    return meta


def _template(ref: JobRef, owner_uid: str, name: str, pod: PodManifest) -> dict[str, Any]:
    spec = pod.obj.get("spec") or {}
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": _meta(ref, owner_uid, name),
        "template": {
            "metadata": {"labels": ref.labels()},
            "spec": {k: spec[k] for k in _TEMPLATE_SPEC if k in spec},
        },
    }


@dataclass(frozen=True)
class RequestState:
    """A ProvisioningRequest as the agent reads it back: whose it is and whether it failed."""

    namespace: str
    name: str
    job_uid: str
    failed: str = ""  # the Failed condition's message (or reason) when it is True


def request_record(obj: Mapping[str, Any]) -> RequestState:
    meta = obj.get("metadata") or {}
    failed = next(
        (
            str(c.get("message") or c.get("reason") or "Failed")
            for c in (obj.get("status") or {}).get("conditions") or []
            if c.get("type") == "Failed" and c.get("status") == "True"
        ),
        "",
    )
    uid = str((meta.get("labels") or {}).get(JOB_UID_LABEL, ""))
    return RequestState(str(meta.get("namespace", "")), str(meta.get("name", "")), uid, failed)


def request_name(ref: JobRef) -> str:
    return f"{ref.name}-{ref.uid[:8]}-g{ref.generation}"[:253]


class NodePools:
    """The pools, the nodes asked of them, and each run's ProvisioningRequest."""

    def __init__(self, configs: Iterable[PoolConfig], submit: Callable[[Op], None]) -> None:
        self.configs = {c.name: c for c in configs}
        self.submit = submit
        self.requests = False  # the cluster serves ProvisioningRequests (else: scheduling gates)
        # per run, per pool: the pool's size once the nodes asked for it are up (a run handed back
        # no longer counts what it asked for: those nodes may never come)
        self.targets: dict[str, dict[str, int]] = {}
        self.asked: dict[str, tuple[JobRef, list[str]]] = {}  # run uid -> its request's objects
        self.version = 0
        self._failed: set[str] = set()  # runs whose request failed, told once
        self._held: dict[str, tuple[Op, set[str]]] = {}  # a request sent once its templates exist

    @property
    def gating(self) -> bool:
        return bool(self.configs) and not self.requests

    def specs(self, nodes: Mapping[str, NodeRecord]) -> tuple[PoolSpec, ...]:
        size = {name: 0 for name in self.configs}
        for rec in nodes.values():
            pool = pool_of(rec.spec.labels)
            if pool in size:
                size[pool] += 1
        return tuple(
            PoolSpec(
                name=c.name,
                allocatable=c.node.spec.allocatable,
                labels=dict(c.node.spec.labels),
                current=size[c.name],
                max=max(c.max, size[c.name]),
                provision_seconds=c.provision_seconds,
                coming=max(
                    0, max((t.get(c.name, 0) for t in self.targets.values()), default=0) - size[c.name]
                ),
            )
            for c in self.configs.values()
        )

    def grow(self, pool: str, count: int, current: int, uid: str = "") -> None:
        if pool not in self.configs:
            raise ValueError(f'no node pool "{pool}" to grow')
        coming = max((t.get(pool, 0) for t in self.targets.values()), default=0)
        self.targets.setdefault(uid, {})[pool] = max(coming, current) + count
        self.version += 1

    def unasked(self, kind: str) -> str:
        """What a pool grown for a run of a workload kind (its pods made by the kind's controller,
        or written as they are) does not do: the agent neither gates those pods nor asks nodes for
        them, so they come only if the cluster's own autoscaler acts on its pending pods."""
        if not self.configs:
            return ""
        return (
            f"the agent asks no nodes for the pods of a {kind} (no ProvisioningRequest, no scheduling "
            "gate: only for Volcano Jobs' pods, which it creates): they come if the cluster's "
            "autoscaler acts on its pending pods"
        )

    def request(self, ref: JobRef, owner_uid: str, waiting: list[PodManifest]) -> None:
        """A ProvisioningRequest for the run's waiting pods (once per run), a PodTemplate per task."""
        if not self.requests or ref.uid in self.asked or not waiting:
            return
        name = request_name(ref)
        tasks: dict[str, list[PodManifest]] = {}
        for pod in waiting:
            tasks.setdefault(pod.task, []).append(pod)
        sets, templates = [], []
        for i, (task, pods) in enumerate(sorted(tasks.items())):
            tname = f"{name}-{i}"
            templates.append(tname)
            body = _template(ref, owner_uid, tname, pods[0])
            self.submit(Op("pool-template", ref.uid, "POST", paths.podtemplates(ref.namespace), body))
            sets.append({"count": len(pods), "podTemplateRef": {"name": tname}})
            log.info(
                "job %s/%s: %d pods of task %s asked of the autoscaler",
                ref.namespace,
                ref.name,
                len(pods),
                task,
            )
        body = {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "ProvisioningRequest",
            "metadata": _meta(ref, owner_uid, name),
            "spec": {"provisioningClassName": PROVISIONING_CLASS, "podSets": sets},
        }
        # after its templates: an autoscaler reading the request before they exist would fail it
        op = Op("pool-request", ref.uid, "POST", paths.provisioning_requests(ref.namespace), body)
        self._held[ref.uid] = (op, set(templates))
        self.asked[ref.uid] = (ref, templates)

    def remove(self, uid: str) -> None:
        """The run is gone (ran, handed back, cancelled): its request and templates go too."""
        found = self.asked.pop(uid, None)
        if self.targets.pop(uid, None):
            self.version += 1  # what it asked for is no longer counted on
        self._failed.discard(uid)
        self._held.pop(uid, None)
        if found is None:
            return
        ref, templates = found
        self.submit(
            Op(
                "pool-delete",
                uid,
                "DELETE",
                paths.provisioning_request(ref.namespace, request_name(ref)),
                persistent=False,
            )
        )
        for t in templates:
            self.submit(
                Op("pool-delete", uid, "DELETE", paths.podtemplate(ref.namespace, t), persistent=False)
            )

    def gate(self, body: dict[str, Any]) -> dict[str, Any]:
        """A pod body held by the provisioning gate (only where requests are not served)."""
        if not self.gating:
            return body
        spec = body.get("spec") or {}
        gates = [*(spec.get("schedulingGates") or []), {"name": GATE}]
        return {**body, "spec": {**spec, "schedulingGates": gates}}

    def ungate(self, namespace: str, pod: str) -> tuple[str, str, Any] | None:
        """The write that lifts the gate before a bind (a merge patch: removing gates is allowed)."""
        if not self.gating:
            return None
        return ("PATCH", paths.pod(namespace, pod), {"spec": {"schedulingGates": None}})

    @staticmethod
    def informer(api: KubeApi, sink: Callable[[Change[RequestState]], None]) -> Informer[RequestState]:
        """The agent's ProvisioningRequests, watched for the ones that fail."""
        return Informer(api, "provisioningrequests", ALL_REQUESTS, request_record, sink, label_selector=OURS)

    def on_change(self, change: Change[RequestState]) -> list[JobProblem]:
        """A run whose ProvisioningRequest failed goes back to the hub now, not at its bind timeout."""
        out = []
        for rec in change.items if change.kind == "replace" else (change.item,):
            asked = self.asked.get(rec.job_uid) if rec is not None and rec.failed else None
            if (
                rec is None
                or asked is None
                or request_name(asked[0]) != rec.name
                or rec.job_uid in self._failed
            ):
                continue
            self._failed.add(rec.job_uid)
            why = (
                f"the cluster cannot add the nodes of its gang (ProvisioningRequest {rec.name}: {rec.failed})"
            )
            out.append(JobProblem(rec.job_uid, "reject", "FailedScaleUp", why))
        return out

    def on_outcome(self, out: Outcome) -> list[JobProblem]:
        """A template made (its request goes once all are), or what went wrong with a pool write
        (nothing when the object is gone already or exists)."""
        err = out.error
        held = self._held.get(out.op.key) if out.op.kind == "pool-template" else None
        if held is not None and (err is None or err.status == 409):
            held[1].discard(str((out.op.body.get("metadata") or {}).get("name")))
            if not held[1]:
                del self._held[out.op.key]
                self.submit(held[0])
        elif held is not None:
            del self._held[out.op.key]  # no request without its templates: the bind timeout hands it back
        if err is None or err.status in (404, 409) or out.op.kind == "pool-delete":
            return []
        what = out.op.path.rsplit("/", 1)[-1]
        why = err.rbac_rule() if err.status == 403 else err.message
        message = f"cannot create {what[:-1]} to grow a node pool: {why}"
        return [JobProblem(out.op.key, "event", "FailedScaleUp", message)]
