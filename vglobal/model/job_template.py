"""A Volcano Job spec held inside another manifest (a CronJob's jobTemplate, a JobTemplate).

It is validated by the Job parser itself, exactly as a submitted Job, with each problem's field
path moved under the place the spec sits in its own manifest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vglobal.model import job
from vglobal.model.errors import ManifestError, Problems
from vglobal.model.job import Job, parse_job
from vglobal.model.k8s import Metadata, check_name

__all__ = ["OWNER_REFERENCES", "check_namespace", "job_document", "parse_embedded_job"]

OWNER_REFERENCES = "ownerReferences"


def check_namespace(p: Problems, meta: Metadata) -> str:
    """The object's namespace (``default`` when unset), checked as a DNS-1123 label."""
    namespace = meta.namespace or "default"
    check_name(p, "metadata.namespace", namespace, label=True)
    return namespace


def _moved(field: str, spec_at: str, metadata_at: str | None) -> str | None:
    """``spec.tasks[0]`` -> ``<spec_at>.tasks[0]``; None for problems of the names given here."""
    for head, to in (("spec", spec_at), ("metadata", metadata_at)):
        if field == head or field.startswith((f"{head}.", f"{head}[")):
            if to is None or field in ("metadata.name", "metadata.namespace"):
                return None
            return to + field[len(head) :]
    return field


def job_document(
    *,
    name: str,
    namespace: str,
    spec: Any,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Job manifest a controller creates from a template (the spec is copied, not shared)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    if owner is not None:
        metadata[OWNER_REFERENCES] = [dict(owner)]
    return {
        "apiVersion": job.API_VERSION,
        "kind": job.KIND,
        "metadata": metadata,
        "spec": copy.deepcopy(spec) if spec is not None else {},
    }


def parse_embedded_job(
    p: Problems,
    document: Mapping[str, Any],
    *,
    spec_at: str,
    metadata_at: str | None = None,
) -> Job | None:
    """Parse a Job built by ``job_document``; its problems go to ``p`` under ``spec_at``/``metadata_at``.

    Problems with the name and namespace are left out: the caller chose them and checks its own.
    A problem of the template's metadata with no ``metadata_at`` is left out too.
    """
    try:
        return parse_job(document)
    except ManifestError as exc:
        moved = [(_moved(f, spec_at, metadata_at), m) for f, m in exc.problems]
        kept = [(f, m) for f, m in moved if f is not None]
        if not kept:  # only the name was wrong: say so rather than fail without a word
            name = document.get("metadata", {}).get("name")
            kept = [(spec_at, f'the Job "{name}" made from it is invalid: {exc}')]
        for f, m in kept:
            p.add(f, m)
        return None
