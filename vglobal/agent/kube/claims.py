"""The agent binds pods itself, so it also does for their DRA claims what kube-scheduler and the
resource-claim controller would: each pod's claim from a ResourceClaimTemplate is created as
``<pod>-<claim>`` (owned by the run's ConfigMap, the pod pointing at it by ``resourceClaimName``),
and at bind its ``status.allocation`` names the node and devices of that node no claim holds."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from vglobal.agent.kube import bodies, dra
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.cache import ClusterCache
from vglobal.agent.kube.writer import Op
from vglobal.model import dra as model_dra

log = logging.getLogger(__name__)


class ClaimWriter:
    def __init__(
        self, submit: Callable[[Op], None], cache: ClusterCache, api_path: Callable[[], str]
    ) -> None:
        self.submit = submit
        self.cache = cache
        self.api_path = api_path  # the resource.k8s.io group version path served ("" : none)
        # (namespace, claim) -> its request by class, until bound; and devices given but not yet seen
        self.pending: dict[str, dict[str, tuple[str, int]]] = {}  # "<ns>/<claim>"
        self.given: dict[str, tuple[dra.Device, ...]] = {}

    def with_claims(
        self, pod: dict[str, Any], annotations: Mapping[str, str], ref: JobRef, owner: str
    ) -> dict[str, Any]:
        """The pod body pointing at its own claims, which are sent for creation first."""
        text = annotations.get(model_dra.CLAIMS_ANNOTATION)
        entries = (pod.get("spec") or {}).get("resourceClaims")
        if not text or not isinstance(entries, list) or not self.api_path():
            return pod
        templates = {
            (d.get("kind"), (d.get("metadata") or {}).get("name")): d
            for d in json.loads(text)
            if isinstance(d, dict)
        }
        ns, name = pod["metadata"].get("namespace", ref.namespace), pod["metadata"]["name"]
        out = []
        for entry in entries:
            tpl = templates.get((model_dra.TEMPLATE_KIND, entry.get("resourceClaimTemplateName")))
            if tpl is None:
                out.append(entry)
                continue
            claim = f"{name}-{entry.get('name')}"
            version = self.api_path().removeprefix("/apis/")
            meta = {"name": claim, "namespace": ns, "labels": ref.labels()}
            meta["ownerReferences"] = [bodies.owner_reference(ref, owner)]
            body = {
                "apiVersion": version,
                "kind": model_dra.CLAIM_KIND,
                "metadata": meta,
                "spec": as_version(model_dra.claim_spec(tpl) or {}, version),
            }
            self.pending[f"{ns}/{claim}"] = _by_name(dra.claim_requests(tpl))
            path = f"{self.api_path()}/namespaces/{ns}/resourceclaims"
            # not "create-object": a claim that exists (the pod made again) is used as it is
            self.submit(Op("create-claim", ref.uid, "POST", path, body))
            out.append({"name": entry.get("name"), "resourceClaimName": claim})
        return {**pod, "spec": {**pod["spec"], "resourceClaims": out}}

    def allocate(self, ns: str, pod: str, spec: Mapping[str, Any], node: str, key: str) -> None:
        """At bind: each of the pod's own claims allocated on ``node``."""
        held = self.cache.dra
        for seen in [k for k in self.given if k in held["resourceclaims"]]:
            del self.given[seen]  # the informer has it now
        slices, classes = held["resourceslices"].values(), held["deviceclasses"].values()
        taken = {d for c in held["resourceclaims"].values() for d in c.allocated}
        taken |= {d for given in self.given.values() for d in given}
        for entry in spec.get("resourceClaims") or []:
            claim = f"{pod}-{entry.get('name')}"
            wanted = self.pending.pop(f"{ns}/{claim}", None)
            known = held["resourceclaims"].get(f"{ns}/{claim}")
            if wanted is None and known is not None and not known.allocated:
                wanted = _by_name(known.requests)  # made before this agent (re)started
            if wanted is None:
                continue
            results = []
            for request, (device_class, count) in wanted.items():
                devices = dra.pick(slices, classes, node, device_class, count, taken)
                if devices is None:
                    log.warning("claim %s/%s: %s has too few free %s devices", ns, claim, node, device_class)
                    break
                taken |= set(devices)
                results += [{"request": request, "driver": d, "pool": p, "device": n} for d, p, n in devices]
            else:
                self.given[f"{ns}/{claim}"] = tuple((r["driver"], r["pool"], r["device"]) for r in results)
                on_node = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                allocation = {
                    "devices": {"results": results},
                    "nodeSelector": {"nodeSelectorTerms": [on_node]},
                }
                path = f"{self.api_path()}/namespaces/{ns}/resourceclaims/{claim}/status"
                self.submit(Op("allocate-claim", key, "PATCH", path, {"status": {"allocation": allocation}}))


def _by_name(requests: dra.Requests) -> dict[str, tuple[str, int]]:
    """request name -> (device class, count)."""
    return {name: (device_class, count) for name, device_class, count in requests}


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
