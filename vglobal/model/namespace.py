"""Namespaces (``v1`` Namespace) as the hub holds them: a job that names no queue goes to the queue
its Namespace's ``scheduling.volcano.sh/queue-name`` annotation names, as Volcano's admission
webhook defaults it, else to ``default``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from vglobal.model.errors import Problems, key_path
from vglobal.model.k8s import OBJECT_FIELDS, Metadata, Model, check_name, validate_model

API_VERSION = "v1"
KIND = "Namespace"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


@dataclass(frozen=True, kw_only=True)
class Namespace:
    name: str
    queue: str = ""  # its queue annotation; "" when it names none
    labels: Mapping[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class NamespaceManifest(Model):
    # spec.finalizers and status are the API server's; the hub keeps them as written.
    passthrough = OBJECT_FIELDS | {"spec"}
    metadata: Metadata = Field(default_factory=Metadata)


def parse_namespace(doc: Mapping[str, Any]) -> Namespace:
    """Validate one Namespace document; raises ManifestError naming every bad field."""
    m = validate_model(NamespaceManifest, doc)
    p = Problems()
    check_name(p, "metadata.name", m.metadata.name, label=True)
    queue = m.metadata.annotations.get(QUEUE_ANNOTATION, "")
    if QUEUE_ANNOTATION in m.metadata.annotations:
        check_name(p, key_path("metadata.annotations", QUEUE_ANNOTATION), queue, label=False)
    p.raise_if_any()
    return Namespace(
        name=m.metadata.name,
        queue=queue,
        labels=dict(m.metadata.labels),
        raw=copy.deepcopy(dict(doc)),
    )


def queue_source(namespace: str, queue: str) -> str:
    """Where a job's queue came from when the job names none, as ``describe`` says it."""
    if queue:
        return f"namespace {namespace} annotation {QUEUE_ANNOTATION}"
    return "default (the job and its namespace name no queue)"
