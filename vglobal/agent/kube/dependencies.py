"""A job's ConfigMaps and Secrets, written in its namespace before its pods (and before the
workload object whose controller makes them).

Each object is owned by every run that uses it (an owner reference to each run's owner
ConfigMap, none of them the controller): it goes when the last of those runs goes. An object
that exists already is patched to the hub's values and gains this run as an owner. Its values go
only to the API server: never to a log or an event.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Sequence
from typing import Any

from vglobal.agent.backends.base import DependencyObject
from vglobal.agent.kube import paths
from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.agent.kube.bodies import AGENT, MANAGED_BY, JobRef
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.model.dependencies import PVC, ObjectRef, references
from vglobal.model.job import Job

log = logging.getLogger(__name__)

PUT = "put-dependency"
PATCH = "patch-dependency"
UPDATE = "update-dependency"


def _path(o: DependencyObject) -> str:
    return paths.secret(o.namespace, o.name) if o.kind == "Secret" else paths.configmap(o.namespace, o.name)


def _collection(o: DependencyObject) -> str:
    return paths.secrets(o.namespace) if o.kind == "Secret" else paths.configmaps(o.namespace)


def _b64(v: bytes) -> str:
    return base64.b64encode(v).decode()


def _data(o: DependencyObject) -> dict[str, dict[str, str]]:
    if o.kind == "Secret":
        return {"data": {k: _b64(v) for k, v in o.data.items()}}
    return {
        "data": {k: v.decode() for k, v in o.data.items() if k in o.text_keys},
        "binaryData": {k: _b64(v) for k, v in o.data.items() if k not in o.text_keys},
    }


def owner_ref(ref: JobRef, owner_uid: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": ref.owner_name, "uid": owner_uid}


def body(o: DependencyObject, owner: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "name": o.name,
        "namespace": o.namespace,
        "labels": {**o.labels, MANAGED_BY: AGENT},
        "ownerReferences": [owner],
    }
    out: dict[str, Any] = {"apiVersion": "v1", "kind": o.kind, "metadata": meta, **_data(o)}
    if o.kind == "Secret":
        out["type"] = o.type or "Opaque"
    if o.immutable:
        out["immutable"] = True
    return out


def patch(o: DependencyObject, existing: dict[str, Any] | None, owner: dict[str, Any] | None) -> list[Any]:
    """A JSON patch giving an existing object the hub's values (and ``owner`` among its owners)."""
    ops: list[dict[str, Any]] = [
        {"op": "add", "path": f"/{field}", "value": value} for field, value in _data(o).items()
    ]
    if owner is not None and existing is not None:
        refs = (existing.get("metadata") or {}).get("ownerReferences") or []
        if all(r.get("uid") != owner["uid"] for r in refs):
            ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": [*refs, owner]})
    return ops


class Dependencies:
    """The writes of each run's dependencies; a run's pods wait until they are answered."""

    def __init__(self, submit: Callable[[Op], None], refused: Callable[[str, Any, str], object]) -> None:
        self.submit = submit
        self.refused = refused
        self.pending: dict[str, set[tuple[str, str]]] = {}  # job uid -> (kind, name) not answered yet
        self.written: dict[str, tuple[DependencyObject, ...]] = {}  # job uid -> what it was sent

    def start(self, uid: str, ref: JobRef, owner_uid: str, objects: Sequence[DependencyObject]) -> bool:
        """Write ``objects`` for the run; True when its pods must wait for the answers."""
        if uid in self.written or not objects:
            return bool(self.pending.get(uid))
        self.written[uid] = tuple(objects)
        self.pending[uid] = {(o.kind, o.name) for o in objects}
        owner = owner_ref(ref, owner_uid)
        for o in objects:
            self.submit(
                Op(
                    PUT,
                    uid,
                    "POST",
                    _collection(o),
                    body(o, owner),
                    fetch_on_conflict=_path(o),
                    extra=(o, owner),
                )
            )
        return True

    def done(self, out: Outcome) -> str | None:
        """Note an answer; the job uid when that was the last its pods waited for."""
        uid = out.op.key
        o, owner = out.op.extra
        if out.op.kind == PUT and out.existing is not None:
            # there already (another run's, or made by hand): the hub's values, this run an owner too
            self.submit(
                Op(
                    PATCH,
                    uid,
                    "PATCH",
                    _path(o),
                    patch(o, out.existing, owner),
                    extra=(o, owner),
                )
            )
            return None
        if out.error is not None:
            self.refused(uid, out.error, f"cannot write {o.kind} {o.namespace}/{o.name}")
        left = self.pending.get(uid)
        if left is None:
            return None
        left.discard((o.kind, o.name))
        if left:
            return None
        del self.pending[uid]
        return uid

    def update(self, objects: Sequence[DependencyObject]) -> None:
        """The hub changed these: patch them where they are (a 404 is an object not here)."""
        for o in objects:
            log.info("updating %s %s/%s to revision %d", o.kind, o.namespace, o.name, o.revision)
            self.submit(
                Op(
                    UPDATE,
                    "",
                    "PATCH",
                    _path(o),
                    patch(o, None, None),
                    persistent=False,
                    extra=(o, None),
                )
            )

    def forget(self, uid: str) -> None:
        self.pending.pop(uid, None)
        self.written.pop(uid, None)


def missing(api: KubeApi, namespace: str, refs: Sequence[ObjectRef]) -> list[str]:
    """Of the objects a job needs that the hub did not send, those this cluster lacks: a ConfigMap
    or Secret not there, a PersistentVolumeClaim not there or Lost. A refusal to read (403) or an
    unreachable API counts as there: the pods then say what is wrong."""
    out = []
    for ref in refs:
        path = {
            "ConfigMap": paths.configmap,
            "Secret": paths.secret,
            PVC: paths.persistentvolumeclaim,
        }[ref.kind](namespace, ref.name)
        try:
            # short: this runs on the agent's main loop, which must keep its heartbeats going
            found = api.request("GET", path, timeout=(2.0, 2.0))
        except ApiError as exc:
            if exc.status == 404:
                out.append(str(ref))
            else:
                log.warning("cannot check %s in %s (%s); going ahead", ref, namespace, exc.message)
            continue
        if ref.kind == PVC and (found.get("status") or {}).get("phase") == "Lost":
            out.append(f"{ref} (Lost)")
    return out


def check_references(
    api: KubeApi, namespace: str, job: Job, sent: Sequence[DependencyObject], cluster: str
) -> None:
    """ValueError naming what the job needs and this cluster lacks (the hub then passes over it)."""
    held = {(o.kind, o.name) for o in sent}
    wanted = [r for r in references(job, required_only=True) if (r.kind, r.name) not in held]
    lacking = missing(api, namespace, wanted) if wanted else []
    if lacking:
        raise ValueError(f"cluster {cluster} lacks {', '.join(lacking)} in namespace {namespace}")
