"""The agent binds pods itself, so it also does for their DRA claims what kube-scheduler and the
resource-claim controller would: each pod's claim from a ResourceClaimTemplate is created as
``<pod>-<claim>``, and at bind its ``status.allocation`` names the node and devices of that node
no claim holds (or, for a capacity share, a multi-allocatable device with that much left).

Pods the agent makes (Volcano Jobs) point at their claims by ``resourceClaimName`` (the claims
owned by the run's ConfigMap); a ResourceClaim the job carries is created once and allocated at
its first pod's bind, the others then bound beside it. Pods a workload's controller makes cannot
be changed: their claims are owned by the pod and named in its ``status.resourceClaimStatuses``,
as the resource-claim controller does, and allocated once created."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from vglobal.agent.kube import bodies, dra, paths
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.cache import ClusterCache
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.model import dra as model_dra
from vglobal.model.quantity import format_units

log = logging.getLogger(__name__)
POD_CLAIM = "create-pod-claim"  # a controller-made pod's claim: allocated once the create answers


def carried(annotations: Mapping[str, str]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """The claims and templates travelling with a job, by (kind, name)."""
    text = annotations.get(model_dra.CLAIMS_ANNOTATION)
    if not text:
        return {}
    return {
        (d.get("kind"), (d.get("metadata") or {}).get("name")): d
        for d in json.loads(text)
        if isinstance(d, dict)
    }


class ClaimWriter:
    def __init__(
        self, submit: Callable[[Op], None], cache: ClusterCache, api_path: Callable[[], str]
    ) -> None:
        self.submit = submit
        self.cache = cache
        self.api_path = api_path  # the resource.k8s.io group version path served ("" : none)
        # "<ns>/<claim>" -> what it asks for, until bound; devices given but not yet seen
        self.pending: dict[str, dra.Requests] = {}
        self.given: dict[str, tuple[tuple[dra.Device, ...], tuple[dra.Consumed, ...]]] = {}
        self.shared: set[tuple[str, str]] = set()  # (run uid, "<ns>/<claim>") sent for creation
        self.waiting: dict[str, tuple[str, str, str]] = {}  # pod claim -> (node, key) once created

    def _create(
        self, ns: str, claim: str, doc: Mapping[str, Any], meta: dict[str, Any], op: str, key: str
    ) -> None:
        version = self.api_path().removeprefix("/apis/")
        body = {
            "apiVersion": version,
            "kind": model_dra.CLAIM_KIND,
            "metadata": {"name": claim, "namespace": ns, **meta},
            "spec": as_version(model_dra.claim_spec(doc) or {}, version),
        }
        self.pending[f"{ns}/{claim}"] = dra.claim_requests(doc)
        # not "create-object": a claim that exists (the pod made again) is used as it is
        self.submit(Op(op, key, "POST", f"{self.api_path()}/namespaces/{ns}/resourceclaims", body))

    def with_claims(
        self, pod: dict[str, Any], annotations: Mapping[str, str], ref: JobRef, owner: str
    ) -> dict[str, Any]:
        """The pod body pointing at its own claims, which are sent for creation first."""
        entries = (pod.get("spec") or {}).get("resourceClaims")
        docs = carried(annotations)
        if not docs or not isinstance(entries, list) or not self.api_path():
            return pod
        ns, name = pod["metadata"].get("namespace", ref.namespace), pod["metadata"]["name"]
        meta = {"labels": ref.labels(), "ownerReferences": [bodies.owner_reference(ref, owner)]}
        out = []
        for entry in entries:
            named = docs.get((model_dra.CLAIM_KIND, entry.get("resourceClaimName")))
            if named is not None and (ref.uid, f"{ns}/{entry['resourceClaimName']}") not in self.shared:
                self.shared.add((ref.uid, f"{ns}/{entry['resourceClaimName']}"))
                self._create(ns, entry["resourceClaimName"], named, meta, "create-claim", ref.uid)
            tpl = docs.get((model_dra.TEMPLATE_KIND, entry.get("resourceClaimTemplateName")))
            if tpl is None:
                out.append(entry)
                continue
            claim = f"{name}-{entry.get('name')}"
            self._create(ns, claim, tpl, meta, "create-claim", ref.uid)
            out.append({"name": entry.get("name"), "resourceClaimName": claim})
        return {**pod, "spec": {**pod["spec"], "resourceClaims": out}}

    def controller_pod(
        self,
        ns: str,
        pod: str,
        pod_uid: str,
        spec: Mapping[str, Any],
        annotations: Mapping[str, str],
        node: str,
        key: str,
    ) -> None:
        """At bind of a pod a workload's controller made: its claims from templates created (owned
        by the pod) and named in its status, then allocated on ``node``; claims it names directly
        allocated there now."""
        docs = carried(annotations)
        if not self.api_path():
            return
        statuses = []
        for entry in spec.get("resourceClaims") or []:
            tpl = docs.get((model_dra.TEMPLATE_KIND, entry.get("resourceClaimTemplateName")))
            if tpl is None:
                if entry.get("resourceClaimName"):
                    self._allocate(ns, str(entry["resourceClaimName"]), node, key)
                continue
            claim = f"{pod}-{entry.get('name')}"
            statuses.append({"name": entry.get("name"), "resourceClaimName": claim})
            owner = {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": pod_uid, "controller": True}
            meta = {
                "ownerReferences": [owner],
                "annotations": {"resource.kubernetes.io/pod-claim-name": str(entry.get("name"))},
            }
            self.waiting[f"{ns}/{claim}"] = (node, key, pod)
            self._create(ns, claim, tpl, meta, POD_CLAIM, key)
        if statuses:
            patch = {"status": {"resourceClaimStatuses": statuses}}
            self.submit(
                Op("claim-status", key, "PATCH", f"{paths.pod(ns, pod)}/status", patch, persistent=False)
            )

    def on_outcome(self, out: Outcome) -> None:
        """A controller-made pod's claim created (or there already): allocate it now."""
        name = out.op.body["metadata"]["name"]
        ns = out.op.body["metadata"]["namespace"]
        node, key, _ = self.waiting.pop(f"{ns}/{name}", ("", "", ""))
        if out.error is not None and out.error.status != 409:
            log.warning("claim %s/%s: not created: %s", ns, name, out.error.message)
            self.pending.pop(f"{ns}/{name}", None)
        elif node:
            self._allocate(ns, name, node, key)

    def allocate(self, ns: str, pod: str, spec: Mapping[str, Any], node: str, key: str) -> None:
        """At bind: each of the pod's claims allocated on ``node``, unless it is already (a shared
        claim, allocated at its first pod's bind)."""
        for entry in spec.get("resourceClaims") or []:
            self._allocate(ns, str(entry.get("resourceClaimName") or f"{pod}-{entry.get('name')}"), node, key)

    def _allocate(self, ns: str, claim: str, node: str, key: str) -> None:
        held = self.cache.dra
        for seen in [
            k for k in self.given if k in held["resourceclaims"] and held["resourceclaims"][k].allocated
        ]:
            del self.given[seen]  # the informer has it now
        full = f"{ns}/{claim}"
        known = held["resourceclaims"].get(full)
        if full in self.given or (known is not None and known.allocated):
            self.pending.pop(full, None)
            return
        wanted = self.pending.pop(full, None)
        if wanted is None and known is not None:
            wanted = known.requests  # made before this agent (re)started, or by the cluster
        if not wanted:
            return
        slices, classes = held["resourceslices"].values(), held["deviceclasses"].values()
        claims = list(held["resourceclaims"].values())
        shares = [u for c in claims for u in c.consumed] + [
            u for _, given in self.given.values() for u in given
        ]
        shared = {d for d, _, _ in shares}
        taken = {d for c in claims for d in c.allocated if d not in shared}
        taken |= {d for given, _ in self.given.values() for d in given if d not in shared}
        used: dict[tuple[dra.Device, str], int] = {}
        for device, cap, units in shares:
            used[(device, cap)] = used.get((device, cap), 0) + units
        results: list[dict[str, Any]] = []
        consumed: list[dra.Consumed] = []
        for request, want in wanted:
            devices = dra.pick(slices, classes, node, want, taken, used)
            if devices is None:
                log.warning("claim %s: %s has too few free %s devices", full, node, want.device_class)
                return
            for d in devices:
                result: dict[str, Any] = {"request": request, "driver": d[0], "pool": d[1], "device": d[2]}
                if want.capacity:
                    caps = {}
                    for cap, units in want.capacity:
                        used[(d, cap)] = used.get((d, cap), 0) + units
                        consumed.append((d, cap, units))
                        caps[cap] = format_units(model_dra.capacity_resource(want.device_class, cap), units)
                    result["consumedCapacity"] = caps
                    result["shareID"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{full}/{request}/{'/'.join(d)}"))
                else:
                    taken.add(d)
                results.append(result)
        self.given[full] = (tuple((r["driver"], r["pool"], r["device"]) for r in results), tuple(consumed))
        on_node = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        allocation = {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [on_node]}}
        path = f"{self.api_path()}/namespaces/{ns}/resourceclaims/{claim}/status"
        self.submit(Op("allocate-claim", key, "PATCH", path, {"status": {"allocation": allocation}}))


def as_version(spec: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A claim spec in the version the cluster serves: v1 wraps each request's device fields in
    ``exactly``, v1beta1 has them on the request."""
    devices = dict(spec.get("devices") or {})
    requests = []
    for r in devices.get("requests") or []:
        inner = r.get("exactly")
        if version.endswith("/v1") and not isinstance(inner, Mapping) and "firstAvailable" not in r:
            requests.append({"name": r.get("name"), "exactly": {k: v for k, v in r.items() if k != "name"}})
        elif not version.endswith("/v1") and isinstance(inner, Mapping):
            requests.append({"name": r.get("name"), **inner})
        else:
            requests.append(dict(r))
    return {**spec, "devices": {**devices, "requests": requests}}
