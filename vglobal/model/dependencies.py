"""A job's dependencies: the v1 ConfigMaps and Secrets its pods reference, held by the hub and
created by the agent in whichever cluster runs the job.

``parse_dependency`` validates a ConfigMap or Secret as the API server does (names, keys, base64,
size) and never puts a value in an error; ``references`` lists what a job's pod templates name
(volumes, projected sources, ``envFrom``, ``env[].valueFrom``, ``imagePullSecrets``) and the
PersistentVolumeClaims they mount, for every kind through the tasks its reader gives.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field, StrictBool, StrictStr

from vglobal.model.errors import Problems, key_path
from vglobal.model.k8s import OBJECT_FIELDS, Metadata, Model, check_name, validate_model

if TYPE_CHECKING:
    from vglobal.model.job import Job

API_VERSION = "v1"
CONFIG_MAP = "ConfigMap"
SECRET = "Secret"
PVC = "PersistentVolumeClaim"
KINDS = (CONFIG_MAP, SECRET)
# The API server's limit on one ConfigMap's or Secret's data.
MAX_DATA_BYTES = 1_048_576
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class ConfigMapManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    data: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    binary_data: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    immutable: StrictBool = False


class SecretManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    data: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    string_data: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    type: StrictStr = "Opaque"
    immutable: StrictBool = False


@dataclass(frozen=True, kw_only=True)
class Dependency:
    """A ConfigMap or Secret: ``data`` holds every key's bytes (a ConfigMap's ``binaryData`` and a
    Secret's decoded ``data`` and ``stringData`` alike); ``text_keys`` are a ConfigMap's ``data``."""

    kind: str
    name: str
    namespace: str
    data: Mapping[str, bytes] = field(repr=False)
    text_keys: frozenset[str] = frozenset()
    type: str = ""
    immutable: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def sizes(self) -> dict[str, int]:
        return {k: len(v) for k, v in sorted(self.data.items())}

    @property
    def secret(self) -> bool:
        return self.kind == SECRET


def _check_keys(p: Problems, where: str, keys: Iterable[str]) -> None:
    for k in keys:
        if not k or len(k) > 253 or not _KEY.match(k) or k in (".", ".."):
            p.add(
                key_path(where, k),
                "invalid key: must be letters, digits, '-', '_' or '.' (at most 253 characters)",
            )


def _decoded(p: Problems, where: str, values: Mapping[str, str]) -> dict[str, bytes]:
    out = {}
    for k, v in values.items():
        try:
            out[k] = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            p.add(key_path(where, k), "must be base64 (the value is not shown)")
    return out


def parse_dependency(doc: Mapping[str, Any]) -> Dependency:
    """Validate one v1 ConfigMap or Secret; raises ManifestError naming every bad field (never a value)."""
    kind = doc.get("kind")
    p = Problems()
    data: dict[str, bytes] = {}
    text: frozenset[str] = frozenset()
    if kind == CONFIG_MAP:
        cm = validate_model(ConfigMapManifest, doc)
        meta, immutable, type_ = cm.metadata, cm.immutable, ""
        _check_keys(p, "data", cm.data)
        _check_keys(p, "binaryData", cm.binary_data)
        for k in sorted(set(cm.data) & set(cm.binary_data)):
            p.add(key_path("binaryData", k), "duplicate of a key in data")
        data = {k: v.encode() for k, v in cm.data.items()} | _decoded(p, "binaryData", cm.binary_data)
        text = frozenset(cm.data)
    else:
        s = validate_model(SecretManifest, doc)
        meta, immutable, type_ = s.metadata, s.immutable, s.type
        _check_keys(p, "data", s.data)
        _check_keys(p, "stringData", s.string_data)
        # stringData wins over data for the same key, as the API server merges them.
        data = _decoded(p, "data", s.data) | {k: v.encode() for k, v in s.string_data.items()}
    check_name(p, "metadata.name", meta.name, label=False)
    check_name(p, "metadata.namespace", meta.namespace, label=True, required=False)
    size = sum(len(k) + len(v) for k, v in data.items())
    if size > MAX_DATA_BYTES:
        p.add("data", f"{size} bytes of data, more than the {MAX_DATA_BYTES} a {kind} may hold")
    p.raise_if_any()
    return Dependency(
        kind=str(kind),
        name=meta.name,
        namespace=meta.namespace or "default",
        data=data,
        text_keys=text,
        type=type_,
        immutable=immutable,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
    )


@dataclass(frozen=True, order=True)
class ObjectRef:
    """An object a job's pods name: ConfigMap, Secret or PersistentVolumeClaim, in the job's namespace."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


def _named(kind: str, value: Any, key: str, required_only: bool) -> Iterable[ObjectRef]:
    if not isinstance(value, Mapping) or not isinstance(value.get(key), str) or not value[key]:
        return
    if not (required_only and value.get("optional") is True):
        yield ObjectRef(kind, value[key])


def _volume_refs(volume: Mapping[str, Any], req: bool) -> Iterable[ObjectRef]:
    yield from _named(CONFIG_MAP, volume.get("configMap"), "name", req)
    yield from _named(SECRET, volume.get("secret"), "secretName", req)
    yield from _named(PVC, volume.get("persistentVolumeClaim"), "claimName", req)
    projected = volume.get("projected")
    for source in (projected.get("sources") or []) if isinstance(projected, Mapping) else []:
        if isinstance(source, Mapping):
            yield from _named(CONFIG_MAP, source.get("configMap"), "name", req)
            yield from _named(SECRET, source.get("secret"), "name", req)


def _container_refs(container: Mapping[str, Any], req: bool) -> Iterable[ObjectRef]:
    for source in container.get("envFrom") or []:
        if isinstance(source, Mapping):
            yield from _named(CONFIG_MAP, source.get("configMapRef"), "name", req)
            yield from _named(SECRET, source.get("secretRef"), "name", req)
    for env in container.get("env") or []:
        value_from = env.get("valueFrom") if isinstance(env, Mapping) else None
        if isinstance(value_from, Mapping):
            yield from _named(CONFIG_MAP, value_from.get("configMapKeyRef"), "name", req)
            yield from _named(SECRET, value_from.get("secretKeyRef"), "name", req)


def template_refs(template: Mapping[str, Any], *, required_only: bool = False) -> set[ObjectRef]:
    """What one pod template references; with ``required_only`` not what it marks ``optional: true``
    (its pods start without those)."""
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping):
        return set()
    out: set[ObjectRef] = set()
    for volume in spec.get("volumes") or []:
        if isinstance(volume, Mapping):
            out.update(_volume_refs(volume, required_only))
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(group) or []:
            if isinstance(container, Mapping):
                out.update(_container_refs(container, required_only))
    for pull in spec.get("imagePullSecrets") or []:
        out.update(_named(SECRET, pull, "name", False))
    return out


def references(job: Job, *, required_only: bool = False) -> tuple[ObjectRef, ...]:
    """Every object the pod templates of ``job``'s tasks reference, sorted."""
    out: set[ObjectRef] = set()
    for task in job.tasks:
        out |= template_refs(task.template, required_only=required_only)
    return tuple(sorted(out))
