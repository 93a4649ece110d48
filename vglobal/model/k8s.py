"""Shared pieces of Kubernetes manifests: metadata, names, pydantic base, resource requests."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError
from pydantic.alias_generators import to_camel

from vglobal.model.errors import ManifestError, Problems, key_path, path_of
from vglobal.model.quantity import QuantityError, parse_decimal, to_units
from vglobal.model.resources import ResourceVector

# Kubernetes' integer fields (replicas, minAvailable, priorities, ...) are 32-bit; so is the column
# such a number is stored in.
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class Model(BaseModel):
    """camelCase on the wire; fields we do not model are ignored here (the raw manifest keeps them)
    and refused or not by strict field validation (``vglobal.model.fields``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)
    # Fields the Kubernetes or Volcano type defines that we pass through without reading.
    passthrough: ClassVar[frozenset[str]] = frozenset()
    # Sub-trees read from the raw manifest rather than modelled: name -> (schema, is a list).
    shapes: ClassVar[Mapping[str, tuple[type[Model], bool]]] = {}


# Fields of every top-level object besides the ones a kind models; status is written by servers.
OBJECT_FIELDS = frozenset({"apiVersion", "kind", "status"})


class Metadata(Model):
    passthrough = frozenset(
        {
            "generateName",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "ownerReferences",
            "finalizers",
            "managedFields",
        }
    )
    name: StrictStr = ""
    namespace: StrictStr = ""
    labels: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    annotations: dict[StrictStr, StrictStr] = Field(default_factory=dict)


# pydantic's messages ("Input should be a valid integer") rephrased the way kubectl users read them.
_MESSAGES = {
    "missing": "required",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "extra_forbidden": "unknown field",
}

M = TypeVar("M", bound=Model)


_INT32: dict[Any, str] = {2**31 - 1: " (a 32-bit integer)", -(2**31): " (a 32-bit integer)"}


def _message(error: Any) -> str:
    ctx = error.get("ctx") or {}
    if error["type"] == "less_than_equal":
        return f"must be at most {ctx.get('le')}" + _INT32.get(ctx.get("le"), "")
    if error["type"] == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}" + _INT32.get(ctx.get("ge"), "")
    return str(_MESSAGES.get(error["type"], error["msg"]))


def validate_model(cls: type[M], doc: Mapping[str, Any]) -> M:
    """Build a pydantic model, turning its errors into a ManifestError with field paths."""
    try:
        return cls.model_validate(doc)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            loc = e["loc"]
            # A bad key of a str->str map is reported by pydantic as "[key]"; drop that marker.
            if loc and loc[-1] == "[key]":
                loc = loc[:-1]
            problems.append((path_of(loc), _message(e)))
        raise ManifestError(problems) from None


def check_name(p: Problems, field: str, value: str, *, label: bool, required: bool = True) -> None:
    """DNS-1123 label (<= 63) or subdomain (<= 253) check, as the API server does for names."""
    if not value:
        if required:
            p.add(field, "required")
        return
    pattern, limit = (DNS1123_LABEL, 63) if label else (DNS1123_SUBDOMAIN, 253)
    if len(value) > limit or not pattern.match(value):
        kind, chars = ("DNS-1123 label", '"-"') if label else ("DNS-1123 subdomain", '"-" and "."')
        p.add(
            field,
            f'invalid name "{value}": must be a {kind} (lowercase letters, digits, {chars}; '
            f"at most {limit} characters)",
        )


def parse_resources(p: Problems, field: str, values: Any) -> ResourceVector:
    """Quantities to units; each bad one is reported at ``field.<resource>``."""
    if values is None:
        return ResourceVector()
    if not isinstance(values, Mapping):
        p.add(field, "must be a mapping of resource name to quantity")
        return ResourceVector()
    out: dict[str, int] = {}
    for name, value in values.items():
        where = key_path(field, str(name))
        try:
            amount = parse_decimal(value)
        except QuantityError:
            p.add(where, f'invalid quantity "{value}"')
            continue
        if amount < 0:
            p.add(where, f'quantity "{value}" must not be negative')
            continue
        try:
            out[str(name)] = to_units(str(name), value)
        except QuantityError as exc:
            p.add(where, str(exc))
    return ResourceVector(out)


def container_request(p: Problems, field: str, container: Mapping[str, Any]) -> ResourceVector:
    """Requests, with a limit standing in for a missing request as Kubernetes defaults it."""
    res = container.get("resources")
    if res is None:
        return ResourceVector()
    if not isinstance(res, Mapping):
        p.add(f"{field}.resources", "must be a mapping")
        return ResourceVector()
    requests = parse_resources(p, f"{field}.resources.requests", res.get("requests"))
    limits = parse_resources(p, f"{field}.resources.limits", res.get("limits"))
    req_names = set(res.get("requests") or {}) if isinstance(res.get("requests"), Mapping) else set()
    for name in sorted(req_names):
        if name in limits and requests[name] > limits[name]:
            p.add(
                key_path(f"{field}.resources.requests", name),
                f"must be less than or equal to {name} limit of {limits.to_quantities()[name]}",
            )
    merged = {**limits.as_dict(), **requests.as_dict()}
    for name in req_names:
        if requests[name] == 0:
            merged.pop(name, None)  # an explicit zero request stays zero even with a limit
    return ResourceVector(merged)


def _containers(p: Problems, field: str, value: Any) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        p.add(field, "must be a list")
        return []
    out: list[Mapping[str, Any]] = []
    for i, c in enumerate(value):
        if isinstance(c, Mapping):
            out.append(c)
        else:
            p.add(f"{field}[{i}]", "must be a mapping")
            out.append({})
    return out


def pod_request(p: Problems, field: str, pod_spec: Any) -> ResourceVector:
    """What the scheduler reserves for one pod, computed as Kubernetes does.

    Σ containers + Σ sidecars (init containers with ``restartPolicy: Always``, which keep running),
    or, where more, each ordinary init container plus the sidecars started before it; then the
    pod ``overhead`` on top.
    """
    if not isinstance(pod_spec, Mapping):
        p.add(field, "must be a mapping")
        return ResourceVector()
    containers = _containers(p, f"{field}.containers", pod_spec.get("containers"))
    if not containers:
        p.add(f"{field}.containers", "at least one container is required")
    total = ResourceVector()
    for i, c in enumerate(containers):
        total = total + container_request(p, f"{field}.containers[{i}]", c)
    sidecars = ResourceVector()
    init_peak = ResourceVector()
    for i, c in enumerate(_containers(p, f"{field}.initContainers", pod_spec.get("initContainers"))):
        req = container_request(p, f"{field}.initContainers[{i}]", c)
        if c.get("restartPolicy") == "Always":
            sidecars = sidecars + req
            init_peak = init_peak.maximum(sidecars)
        else:
            init_peak = init_peak.maximum(req + sidecars)
    total = (total + sidecars).maximum(init_peak)
    return total + parse_resources(p, f"{field}.overhead", pod_spec.get("overhead"))
