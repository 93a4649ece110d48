"""ObjectService: the ConfigMaps and Secrets jobs depend on. No answer holds a Secret's values:
its keys and their sizes only; a ConfigMap's values only through GetObject."""

from __future__ import annotations

import logging

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.orm import Session

from vglobal.api.v1 import objects_pb2, objects_pb2_grpc
from vglobal.hub.auth.access import require, who
from vglobal.hub.auth.policy import Action
from vglobal.hub.context import HubContext
from vglobal.hub.dependencies import users
from vglobal.hub.errors import FailedPrecondition, InvalidArgument, NotFound, rpc
from vglobal.hub.secret_box import SecretKeyError
from vglobal.hub.submit import parse_one
from vglobal.model.binding import ADMITTED, BindingPhase
from vglobal.model.dependencies import KINDS, Dependency
from vglobal.model.errors import bounded_list
from vglobal.store.engine import dry_run_scope, session_scope
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import objects as objects_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.objects import ObjectRow

log = logging.getLogger(__name__)
_RUNNING = {p.value for p in ADMITTED}


def _stamp(t: object) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(t)  # type: ignore[arg-type]
    return ts


def view(
    row: ObjectRow, *, with_data: bool = False, used_by: list[str] | None = None
) -> objects_pb2.DependencyObjectView:
    """``row`` as answers show it: a ConfigMap's text values only when asked, a Secret's never."""
    data = {}
    if with_data and row.sealed is None and row.data is not None:
        data = {k: row.data[k].decode("utf-8", "replace") for k in row.text_keys if k in row.data}
    return objects_pb2.DependencyObjectView(
        kind=row.kind,
        namespace=row.namespace,
        name=row.name,
        type=row.type,
        immutable=row.immutable,
        labels=dict(row.labels),
        keys=[objects_pb2.ObjectKey(name=k, size=int(n)) for k, n in sorted(row.sizes.items())],
        data=data,
        revision=row.revision,
        created_at=_stamp(row.created_at),
        updated_at=_stamp(row.updated_at),
        used_by=used_by or [],
    )


def _kind(kind: str) -> str:
    for k in KINDS:
        if kind.lower() in (k.lower(), k.lower() + "s") or (kind.lower() == "cm" and k == "ConfigMap"):
            return k
    raise InvalidArgument(f'kind: must be ConfigMap or Secret, not "{kind}"')


def _same(row: ObjectRow, dep: Dependency, ctx: HubContext) -> bool:
    """Whether storing ``dep`` would change nothing (a Secret compared opened, never sealed)."""
    if (row.type, row.immutable, dict(row.labels), set(row.text_keys)) != (
        dep.type,
        dep.immutable,
        dict(dep.labels),
        set(dep.text_keys),
    ):
        return False
    what = f"secret/{row.namespace}/{row.name}"
    try:
        old = ctx.secrets.open(row.sealed, what=what) if row.sealed is not None else dict(row.data or {})
    except SecretKeyError:
        return False  # sealed under a key the hub no longer has: applying it again seals it anew
    return old == dict(dep.data)


def reseal_secrets(ctx: HubContext) -> int:
    """Seal every stored Secret under the first key (after a key was added first); how many."""
    n = 0
    with session_scope(ctx.sessions) as session:
        for ns, name, sealed in objects_repo.sealed_rows(session=session):
            try:
                again = ctx.secrets.reseal(sealed, what=f"secret/{ns}/{name}")
            except SecretKeyError as exc:
                log.error("%s", exc)
                continue
            if again is None:
                continue  # sealed under the first key already
            objects_repo.set_sealed(ns, name, again, session=session)
            n += 1
    if n:
        log.info("re-sealed %d secrets under the first secret key", n)
    return n


class ObjectServicer(objects_pb2_grpc.ObjectServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx

    def _audit(self, reason: str, row: ObjectRow | Dependency, message: str, *, session: Session) -> None:
        subject = f"{row.kind.lower()} {row.namespace}/{row.name}"
        events_repo.add_events([NewEvent(reason, message, subject=subject, principal=who())], session=session)

    @rpc
    def ApplyObject(
        self, request: objects_pb2.ApplyObjectRequest, context: grpc.ServicerContext
    ) -> objects_pb2.ApplyObjectResponse:
        require(Action.manage_objects)
        dep = parse_one(
            request.manifest,
            Dependency,
            max_bytes=self.ctx.settings.max_manifest_bytes,
            validation=request.field_validation,
        )
        if dep.secret and not self.ctx.secrets.ready:
            raise FailedPrecondition(
                "kind: this hub holds no key for Secrets; start it with --secret-keys-file "
                "(or VGLOBAL_SECRET_KEYS)"
            )
        with dry_run_scope(self.ctx.sessions, request.dry_run) as session:
            old = objects_repo.get(dep.kind, dep.namespace, dep.name, session=session, for_update=True)
            if old is not None and _same(old, dep, self.ctx):
                return objects_pb2.ApplyObjectResponse(object=view(old), outcome="unchanged")
            if old is not None and old.immutable:
                raise FailedPrecondition(
                    f"{dep.kind.lower()}/{dep.namespace}/{dep.name}: immutable; delete it and apply it again"
                )
            sealed = self.ctx.secrets.seal(dep.data) if dep.secret else None
            row = objects_repo.upsert(dep, sealed, session=session)
            outcome = "created" if old is None else "configured"
            self._audit(
                "ObjectApplied",
                dep,
                f"{outcome}, {len(dep.data)} keys, revision {row.revision}",
                session=session,
            )
            return objects_pb2.ApplyObjectResponse(object=view(row), outcome=outcome)

    def _get(self, ref: objects_pb2.ObjectRef, session: Session, *, for_update: bool = False) -> ObjectRow:
        kind = _kind(ref.kind)
        if not ref.name:
            raise InvalidArgument("name: a name is required")
        namespace = ref.namespace or "default"
        row = objects_repo.get(kind, namespace, ref.name, session=session, for_update=for_update)
        if row is None:
            raise NotFound(f'{kind.lower()} "{namespace}/{ref.name}" not found')
        return row

    def _used_by(self, row: ObjectRow, session: Session) -> list[tuple[str, str, str, str | None]]:
        return users(row.kind, row.namespace, row.name, session=session)

    @rpc
    def GetObject(
        self, request: objects_pb2.ObjectRef, context: grpc.ServicerContext
    ) -> objects_pb2.DependencyObjectView:
        require(Action.read_objects)
        with session_scope(self.ctx.sessions) as session:
            row = self._get(request, session)
            used = [f"{row.namespace}/{name}" for _, name, _, _ in self._used_by(row, session)]
        return view(row, with_data=True, used_by=used)

    @rpc
    def ListObjects(
        self, request: objects_pb2.ListObjectsRequest, context: grpc.ServicerContext
    ) -> objects_pb2.ListObjectsResponse:
        require(Action.read_objects)
        kind = _kind(request.kind) if request.kind else ""
        with session_scope(self.ctx.sessions) as session:
            rows = objects_repo.list_objects(session=session, kind=kind, namespace=request.namespace)
        return objects_pb2.ListObjectsResponse(objects=[view(r) for r in rows])

    @rpc
    def DeleteObject(
        self, request: objects_pb2.DeleteObjectRequest, context: grpc.ServicerContext
    ) -> objects_pb2.DependencyObjectView:
        require(Action.manage_objects)
        with session_scope(self.ctx.sessions) as session:
            row = self._get(request.ref, session, for_update=True)
            running = [
                f"{row.namespace}/{name} ({BindingPhase(phase).value} on {cluster})"
                for _, name, phase, cluster in self._used_by(row, session)
                if phase in _RUNNING
            ]
            if running and not request.force:
                raise FailedPrecondition(
                    f"{row.kind.lower()}/{row.namespace}/{row.name} is used by running jobs: "
                    f"{bounded_list(running, sep=', ')}; delete it with --force to remove it anyway "
                    "(the clusters keep their copies until those jobs end)"
                )
            objects_repo.delete(row.kind, row.namespace, row.name, session=session)
            self._audit("ObjectDeleted", row, "forced" if running else "", session=session)
        return view(row)
