"""The hub's side of a job's dependencies: what a stored job's pods reference, the objects a
Dispatch carries to the cluster that runs it (a Secret opened only here, for that message), and
the unfinished jobs that use an object."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from vglobal.api.v1 import agent_pb2
from vglobal.hub.secret_box import SecretBox
from vglobal.model.dependencies import KINDS, ObjectRef, references
from vglobal.model.errors import ManifestError
from vglobal.model.fields import FieldValidation
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifest
from vglobal.store.repo import objects as objects_repo
from vglobal.store.repo.objects import ObjectRow

log = logging.getLogger(__name__)

# A manifest without any of these words references nothing: most jobs skip the parse.
_MAY_REFER = re.compile(r"configMap|secret|Secret|persistentVolumeClaim")


def manifest_refs(manifest: str | Mapping[str, Any]) -> tuple[ObjectRef, ...]:
    """What a stored job's pod templates reference (any kind, read as its reader reads it)."""
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    if not _MAY_REFER.search(text):
        return ()
    doc = json.loads(manifest) if isinstance(manifest, str) else manifest
    try:
        job = parse_manifest(doc, validation=FieldValidation.IGNORE)
    except ManifestError:
        return ()  # stored manifests were valid when stored; a reader changed since refers to none
    return references(job) if isinstance(job, Job) else ()


def held_refs(refs: Iterable[ObjectRef]) -> list[tuple[str, str]]:
    """The references to kinds the hub holds (not PersistentVolumeClaims)."""
    return [(r.kind, r.name) for r in refs if r.kind in KINDS]


def object_data(row: ObjectRow, box: SecretBox) -> agent_pb2.ObjectData:
    """``row`` as an agent receives it, a Secret opened (only for this message)."""
    what = f"{row.kind.lower()}/{row.namespace}/{row.name}"
    data = box.open(row.sealed, what=what) if row.sealed is not None else dict(row.data or {})
    return agent_pb2.ObjectData(
        kind=row.kind,
        namespace=row.namespace,
        name=row.name,
        type=row.type,
        immutable=row.immutable,
        labels=dict(row.labels),
        data=data,
        text_keys=list(row.text_keys),
        revision=row.revision,
    )


def dispatch_objects(
    namespace: str, manifest: str, box: SecretBox, *, session: Session
) -> list[agent_pb2.ObjectData]:
    """The objects the hub holds that the job's pods reference, for its Dispatch. An object that
    cannot be opened (no key opens it) is left out and logged by name: the pods then wait on it."""
    rows = objects_repo.fetch(namespace, held_refs(manifest_refs(manifest)), session=session)
    out = []
    for row in rows:
        try:
            out.append(object_data(row, box))
        except ValueError as exc:
            log.error("not sending %s/%s/%s: %s", row.kind, row.namespace, row.name, exc)
    return out


def users(
    row_kind: str, namespace: str, name: str, *, session: Session, clusters: Sequence[str] | None = None
) -> list[tuple[str, str, str, str | None]]:
    """Unfinished jobs whose pods reference the object, as (uid, name, binding phase, cluster)."""
    ref = ObjectRef(row_kind, name)
    return [
        (uid, job_name, phase, cluster)
        for uid, job_name, phase, cluster, manifest in objects_repo.unfinished_manifests(
            namespace, session=session, clusters=clusters
        )
        if ref in manifest_refs(manifest)
    ]
