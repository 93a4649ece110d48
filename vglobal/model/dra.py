"""Dynamic Resource Allocation: a pod's ``resourceClaims`` as resources the hub fits and charges.

Each device request of a claim becomes ``deviceclass/<deviceClassName>`` x its count per pod, the
name Volcano 1.15 charges queues by; nodes report their DRA devices under the same name, so the
admission core fits and charges them as any extended resource. The ResourceClaimTemplates and
ResourceClaims a job references travel with it, in the ``CLAIMS_ANNOTATION`` (``vglobal apply``
puts there those of the same files); the agent creates them in the member cluster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from vglobal.model.errors import Problems, key_path
from vglobal.model.quantity import QuantityError, to_units
from vglobal.model.resources import ResourceVector

API_GROUP = "resource.k8s.io"
API_VERSIONS = (f"{API_GROUP}/v1", f"{API_GROUP}/v1beta2", f"{API_GROUP}/v1beta1")
TEMPLATE_KIND = "ResourceClaimTemplate"
CLAIM_KIND = "ResourceClaim"
CLAIM_KINDS = (TEMPLATE_KIND, CLAIM_KIND)
CLAIMS_ANNOTATION = "vglobal.io/resource-claims"
RESOURCE_PREFIX = "deviceclass/"
# What names a claim in a pod's resourceClaims entry, by the kind it names.
REFERENCE = {TEMPLATE_KIND: "resourceClaimTemplateName", CLAIM_KIND: "resourceClaimName"}
UNIT = 1000  # one device, in the milli-units every extended resource is counted in

Sources = Mapping[tuple[str, str], ResourceVector]  # (kind, name) -> devices one pod's claim takes


def device_resource(device_class: str) -> str:
    return f"{RESOURCE_PREFIX}{device_class}"


def capacity_resource(device_class: str, capacity: str) -> str:
    """A shared device's consumable capacity (KEP-5075), e.g. ``deviceclass/gpu.example.com/memory``."""
    return f"{RESOURCE_PREFIX}{device_class}/{capacity}"


# The CEL selectors a request may carry: an attribute equal to a value, which the agent matches
# when it picks devices, and the multi-allocation test KEP-5075's examples write.
ATTRIBUTE_IS = re.compile(
    r"""^\s*device\.attributes\[\s*["']([^"']+)["']\s*\]\.([A-Za-z0-9_]+)\s*==\s*"""
    r"""(?:["']([^"']*)["']|(true|false|-?\d+))\s*$"""
)
MULTIPLE_IS = re.compile(r"^\s*device\.allowMultipleAllocations\s*==\s*true\s*$")
Selector = tuple[str, str, str]  # (domain, attribute name, value as text)


def selector_of(expression: str) -> Selector | None:
    """``device.attributes["<domain>"].<name> == <value>`` as (domain, name, value); None otherwise."""
    m = ATTRIBUTE_IS.match(expression)
    if m is None:
        return None
    return m.group(1), m.group(2), m.group(3) if m.group(3) is not None else m.group(4)


def request_selectors(p: Problems, where: str, body: Mapping[str, Any]) -> tuple[Selector, ...]:
    """A request's CEL selectors of the simple attribute form; any other is refused, naming it."""
    selectors = body.get("selectors")
    if selectors is None:
        return ()
    if not isinstance(selectors, list):
        p.add(f"{where}.selectors", "must be a list")
        return ()
    out = []
    for i, s in enumerate(selectors):
        expr = ((s.get("cel") or {}) if isinstance(s, Mapping) else {}).get("expression")
        at = f"{where}.selectors[{i}].cel.expression"
        if not isinstance(expr, str):
            p.add(at, "required: a CEL expression")
        elif (sel := selector_of(expr)) is not None:
            out.append(sel)
        elif MULTIPLE_IS.match(expr) is None:
            p.add(
                at,
                'not supported: only device.attributes["<domain>"].<name> == "<value>" (and '
                "device.allowMultipleAllocations == true) are read",
            )
    return tuple(out)


def capacity_requests(p: Problems, where: str, body: Mapping[str, Any]) -> dict[str, int]:
    """A request's ``capacity.requests`` (KEP-5075), per capacity name, in its resource's units."""
    capacity = body.get("capacity")
    if capacity is None:
        return {}
    requests = capacity.get("requests") if isinstance(capacity, Mapping) else None
    if not isinstance(requests, Mapping) or not requests:
        p.add(f"{where}.capacity.requests", "required: a mapping of capacity name to quantity")
        return {}
    device_class = str(body.get("deviceClassName", ""))
    out = {}
    for name, value in requests.items():
        try:
            out[str(name)] = to_units(capacity_resource(device_class, str(name)), value)
        except QuantityError as exc:
            p.add(key_path(f"{where}.capacity.requests", str(name)), str(exc))
    return out


def _namespace(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata")
    return str((meta.get("namespace") if isinstance(meta, Mapping) else None) or "default")


ClaimKey = tuple[str, str, str]  # (namespace, kind, name)


def is_claim_document(doc: Any) -> bool:
    return (
        isinstance(doc, Mapping)
        and doc.get("kind") in CLAIM_KINDS
        and str(doc.get("apiVersion", "")).startswith(f"{API_GROUP}/")
    )


def _name(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def claim_spec(doc: Mapping[str, Any]) -> Any:
    """A ResourceClaim's spec; a template's is one level down (``spec.spec``)."""
    spec = doc.get("spec")
    if doc.get("kind") == TEMPLATE_KIND:
        return spec.get("spec") if isinstance(spec, Mapping) else None
    return spec


def _count(p: Problems, where: str, body: Mapping[str, Any]) -> int:
    """Devices of one request: ``count`` (default 1) for ExactCount; ``All`` needs at least one."""
    mode = body.get("allocationMode", "ExactCount")
    if mode == "All":
        return 1
    if mode != "ExactCount":
        p.add(f"{where}.allocationMode", f'must be ExactCount or All, not "{mode}"')
        return 0
    count = body.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        p.add(f"{where}.count", f"must be a whole number >= 1, not {count!r}")
        return 0
    return count


def claim_devices(p: Problems, where: str, doc: Mapping[str, Any]) -> ResourceVector:
    """The devices one claim (or one claim made from a template) takes, by DeviceClass."""
    at = f"{where}.spec.spec" if doc.get("kind") == TEMPLATE_KIND else f"{where}.spec"
    spec = claim_spec(doc)
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    if not isinstance(requests, list) or not requests:
        p.add(f"{at}.devices.requests", "required: at least one device request")
        return ResourceVector()
    out: dict[str, int] = {}
    for i, request in enumerate(requests):
        here = f"{at}.devices.requests[{i}]"
        if not isinstance(request, Mapping):
            p.add(here, "must be a mapping")
            continue
        if "firstAvailable" in request:
            p.add(f"{here}.firstAvailable", "not supported: name one device class (exactly)")
            continue
        body, body_at = request, here
        if isinstance(request.get("exactly"), Mapping):  # resource.k8s.io/v1
            body, body_at = request["exactly"], f"{here}.exactly"
        device_class = body.get("deviceClassName")
        if not isinstance(device_class, str) or not device_class:
            p.add(f"{body_at}.deviceClassName", "required")
            continue
        count = _count(p, body_at, body)
        request_selectors(p, body_at, body)
        shares = capacity_requests(p, body_at, body)
        # a share of a multi-allocatable device takes its capacity, not a whole device
        for cap, units in shares.items() or [(None, 0)]:
            name = device_resource(device_class) if cap is None else capacity_resource(device_class, cap)
            out[name] = out.get(name, 0) + count * (UNIT if cap is None else units)
    return ResourceVector(out)


def claim_sources(p: Problems, annotations: Mapping[str, str]) -> dict[tuple[str, str], ResourceVector]:
    """The claims and templates that travel with a job, read from its ``CLAIMS_ANNOTATION``."""
    text = annotations.get(CLAIMS_ANNOTATION)
    if text is None:
        return {}
    where = key_path("metadata.annotations", CLAIMS_ANNOTATION)
    try:
        docs = json.loads(text)
    except ValueError:
        p.add(where, "must be a JSON list of ResourceClaimTemplates and ResourceClaims")
        return {}
    if not isinstance(docs, list):
        p.add(where, "must be a JSON list of ResourceClaimTemplates and ResourceClaims")
        return {}
    out: dict[tuple[str, str], ResourceVector] = {}
    for i, doc in enumerate(docs):
        here = f"{where}[{i}]"
        if not isinstance(doc, Mapping) or not is_claim_document(doc):
            p.add(here, f"must be a ResourceClaimTemplate or ResourceClaim ({', '.join(API_VERSIONS)})")
            continue
        if not _name(doc):
            p.add(f"{here}.metadata.name", "required")
            continue
        out[(str(doc["kind"]), _name(doc))] = claim_devices(p, here, doc)
    return out


def references(pod_spec: Mapping[str, Any]) -> Iterator[tuple[int, str, str]]:
    """(index, kind, name) of each claim a pod spec's ``resourceClaims`` names."""
    claims = pod_spec.get("resourceClaims")
    for i, entry in enumerate(claims if isinstance(claims, list) else []):
        if not isinstance(entry, Mapping):
            continue
        for kind, field in REFERENCE.items():
            if isinstance(entry.get(field), str) and entry[field]:
                yield i, kind, str(entry[field])


def pod_claims(p: Problems, field: str, pod_spec: Any, sources: Sources) -> ResourceVector:
    """The devices one pod's own claims (from templates) take; a claim not travelling with the job
    is refused, naming the field, since no node of ours would ever fit it. A ResourceClaim named
    directly is one allocation however many pods name it: ``shared_claims``."""
    if not isinstance(pod_spec, Mapping):
        return ResourceVector()
    claims = pod_spec.get("resourceClaims")
    if claims is None:
        _check_container_claims(p, field, pod_spec, set())
        return ResourceVector()
    if not isinstance(claims, list):
        p.add(f"{field}.resourceClaims", "must be a list")
        return ResourceVector()
    names: set[str] = set()
    total = ResourceVector()
    for i, entry in enumerate(claims):
        here = f"{field}.resourceClaims[{i}]"
        if not isinstance(entry, Mapping):
            p.add(here, "must be a mapping")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            p.add(f"{here}.name", "required")
        elif name in names:
            p.add(f"{here}.name", f'duplicate claim name "{name}"')
        else:
            names.add(name)
        named = [(k, f) for k, f in REFERENCE.items() if entry.get(f)]
        if len(named) != 1:
            p.add(here, "needs exactly one of resourceClaimTemplateName, resourceClaimName")
            continue
        kind, ref_field = named[0]
        ref = str(entry[ref_field])
        devices = sources.get((kind, ref))
        if devices is None:
            p.add(
                f"{here}.{ref_field}",
                f'{kind} "{ref}" is not known: apply it in the same file as the job',
            )
            continue
        if kind == TEMPLATE_KIND:
            total = total + devices
    _check_container_claims(p, field, pod_spec, names)
    return total


def shared_claims(pod_spec: Any, sources: Sources) -> dict[str, ResourceVector]:
    """The ResourceClaims a pod spec names directly (``resourceClaimName``), by name, with their
    devices: charged once for all the pods naming one, which must then share its node."""
    if not isinstance(pod_spec, Mapping):
        return {}
    return {
        name: sources[(kind, name)]
        for _, kind, name in references(pod_spec)
        if kind == CLAIM_KIND and (kind, name) in sources
    }


def _check_container_claims(p: Problems, field: str, pod_spec: Mapping[str, Any], names: set[str]) -> None:
    for group in ("containers", "initContainers"):
        containers = pod_spec.get(group)
        for i, c in enumerate(containers if isinstance(containers, list) else []):
            res = c.get("resources") if isinstance(c, Mapping) else None
            claims = res.get("claims") if isinstance(res, Mapping) else None
            if claims is None:
                continue
            where = f"{field}.{group}[{i}].resources.claims"
            if not isinstance(claims, list):
                p.add(where, "must be a list")
                continue
            for j, claim in enumerate(claims):
                name = claim.get("name") if isinstance(claim, Mapping) else None
                if name not in names:
                    p.add(f"{where}[{j}].name", f'"{name}" is not one of the pod\'s resourceClaims')


def attach(job: Mapping[str, Any], claims: Mapping[ClaimKey, Mapping[str, Any]]) -> dict[str, Any]:
    """``job`` with the claims it references (of its namespace, by (namespace, kind, name)) in its
    ``CLAIMS_ANNOTATION``; unchanged when it references none of them."""
    meta = job.get("metadata") if isinstance(job.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    namespace = _namespace(job)
    wanted = sorted({(kind, name) for spec in pod_specs(job) for _, kind, name in references(spec)})
    found = [claims[(namespace, k, n)] for k, n in wanted if (namespace, k, n) in claims]
    if not found:
        return dict(job)
    annotations = dict(meta.get("annotations") or {})
    annotations[CLAIMS_ANNOTATION] = json.dumps(found, sort_keys=True, separators=(",", ":"))
    return {**job, "metadata": {**meta, "annotations": annotations}}


def carry(docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[ClaimKey, list[str]]]:
    """The documents of a file set without its claims, each job carrying those it references;
    and, for each claim, the jobs it travels with (in order)."""
    claims = {(_namespace(d), str(d["kind"]), _name(d)): d for d in docs if is_claim_document(d)}
    users: dict[ClaimKey, list[str]] = {key: [] for key in claims}
    out: list[dict[str, Any]] = []
    for doc in docs:
        if is_claim_document(doc):
            continue
        if not isinstance(doc, Mapping):
            out.append(doc)  # refused by whoever parses it
            continue
        ns = _namespace(doc)
        named = {(ns, k, n) for spec in pod_specs(doc) for _, k, n in references(spec)} & users.keys()
        for key in sorted(named):
            users[key].append(_name(doc))
        out.append(attach(doc, claims) if named else doc)
    return out, users


def pod_specs(obj: Any) -> Iterator[Mapping[str, Any]]:
    """Every pod spec in a manifest of any kind: the mappings holding ``containers``."""
    if isinstance(obj, Mapping):
        if isinstance(obj.get("containers"), list):
            yield obj
            return
        for value in obj.values():
            yield from pod_specs(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from pod_specs(value)
