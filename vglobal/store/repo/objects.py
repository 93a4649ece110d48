"""A job's dependencies held by the hub: v1 ConfigMaps and Secrets (``tables.dependency_objects``).

A Secret comes in and goes out sealed: this module never sees its values in clear.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from vglobal.model.binding import UNFINISHED, values
from vglobal.model.dependencies import Dependency
from vglobal.store.tables import dependency_objects as objects
from vglobal.store.tables import jobs, resource_bindings

_UNFINISHED = values(UNFINISHED)


@dataclass(frozen=True)
class ObjectRow:
    kind: str
    namespace: str
    name: str
    type: str
    immutable: bool
    labels: Mapping[str, str]
    sizes: Mapping[str, int]
    text_keys: tuple[str, ...]
    data: Mapping[str, bytes] | None = field(repr=False)  # a ConfigMap's values; None for a Secret
    sealed: bytes | None = field(repr=False)  # a Secret's values, sealed
    revision: int
    created_at: datetime
    updated_at: datetime

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind, self.name)


def _row(r: sa.Row[Any]) -> ObjectRow:
    m = r._mapping
    data = m["data"]
    return ObjectRow(
        kind=m["kind"],
        namespace=m["namespace"],
        name=m["name"],
        type=m["type"],
        immutable=m["immutable"],
        labels=m["labels"],
        sizes=m["sizes"],
        text_keys=tuple(m["text_keys"]),
        data=None if data is None else {k: base64.b64decode(v) for k, v in data.items()},
        sealed=None if m["sealed"] is None else bytes(m["sealed"]),
        revision=int(m["revision"]),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def upsert(dep: Dependency, sealed: bytes | None, *, session: Session) -> ObjectRow:
    """Store ``dep`` (a Secret's values only as ``sealed``) under a new revision."""
    row = {
        "namespace": dep.namespace,
        "kind": dep.kind,
        "name": dep.name,
        "type": dep.type,
        "immutable": dep.immutable,
        "labels": dict(dep.labels),
        "annotations": dict(dep.annotations),
        "sizes": dep.sizes,
        "text_keys": sorted(dep.text_keys),
        "data": None if dep.secret else {k: base64.b64encode(v).decode() for k, v in dep.data.items()},
        "sealed": sealed if dep.secret else None,
    }
    stmt = insert(objects).values(row)
    stmt = stmt.on_conflict_do_update(
        index_elements=["namespace", "kind", "name"],
        set_={
            **{k: stmt.excluded[k] for k in row if k not in ("namespace", "kind", "name")},
            "revision": sa.func.nextval("dependency_revisions"),
            "updated_at": sa.func.now(),
        },
    )
    session.execute(stmt)
    got = get(dep.kind, dep.namespace, dep.name, session=session)
    assert got is not None
    return got


def get(
    kind: str, namespace: str, name: str, *, session: Session, for_update: bool = False
) -> ObjectRow | None:
    q = sa.select(objects).where(
        objects.c.kind == kind, objects.c.namespace == namespace, objects.c.name == name
    )
    r = session.execute(q.with_for_update() if for_update else q).first()
    return None if r is None else _row(r)


def list_objects(*, session: Session, kind: str = "", namespace: str = "") -> list[ObjectRow]:
    q = sa.select(objects).order_by(objects.c.namespace, objects.c.kind, objects.c.name)
    if kind:
        q = q.where(objects.c.kind == kind)
    if namespace:
        q = q.where(objects.c.namespace == namespace)
    return [_row(r) for r in session.execute(q)]


def delete(kind: str, namespace: str, name: str, *, session: Session) -> bool:
    got = session.execute(
        sa.delete(objects).where(
            objects.c.kind == kind, objects.c.namespace == namespace, objects.c.name == name
        )
    )
    return bool(getattr(got, "rowcount", 0))


def fetch(namespace: str, refs: Sequence[tuple[str, str]], *, session: Session) -> list[ObjectRow]:
    """The objects of ``namespace`` among (kind, name) ``refs`` that the hub holds."""
    if not refs:
        return []
    pairs = sa.tuple_(objects.c.kind, objects.c.name).in_([tuple(r) for r in refs])
    q = (
        sa.select(objects)
        .where(objects.c.namespace == namespace, pairs)
        .order_by(objects.c.kind, objects.c.name)
    )
    return [_row(r) for r in session.execute(q)]


def last_revision(*, session: Session) -> int:
    return int(session.execute(sa.select(sa.func.coalesce(sa.func.max(objects.c.revision), 0))).scalar_one())


def changed_since(revision: int, *, session: Session) -> list[ObjectRow]:
    q = sa.select(objects).where(objects.c.revision > revision).order_by(objects.c.revision)
    return [_row(r) for r in session.execute(q)]


def sealed_rows(*, session: Session) -> list[tuple[str, str, bytes]]:
    """Every stored Secret as (namespace, name, sealed), for re-sealing under a new key."""
    q = sa.select(objects.c.namespace, objects.c.name, objects.c.sealed).where(objects.c.sealed.is_not(None))
    return [(ns, name, bytes(sealed)) for ns, name, sealed in session.execute(q)]


def set_sealed(namespace: str, name: str, sealed: bytes, *, session: Session) -> None:
    """Re-sealed values (the same values): the revision stays, agents have nothing to update."""
    session.execute(
        sa.update(objects)
        .where(objects.c.namespace == namespace, objects.c.kind == "Secret", objects.c.name == name)
        .values(sealed=sealed)
    )


def unfinished_manifests(
    namespace: str, *, session: Session, clusters: Sequence[str] | None = None, admitted_only: bool = False
) -> list[tuple[str, str, str, str | None, dict[str, Any]]]:
    """Unfinished jobs of ``namespace`` as (uid, name, binding phase, cluster, manifest): whose pods
    may reference an object there."""
    q = (
        sa.select(
            jobs.c.uid, jobs.c.name, resource_bindings.c.phase, resource_bindings.c.cluster, jobs.c.manifest
        )
        .join(resource_bindings, resource_bindings.c.job_uid == jobs.c.uid)
        .where(jobs.c.namespace == namespace, resource_bindings.c.phase.in_(_UNFINISHED))
        .order_by(jobs.c.name)
    )
    if clusters is not None:
        q = q.where(resource_bindings.c.cluster.in_(list(clusters)))
    return [(r[0], r[1], r[2], r[3], r[4]) for r in session.execute(q)]
