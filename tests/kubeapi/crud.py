"""Create, update, patch and delete with the apiserver's rules: names and generateName, namespaces that
must exist, resourceVersion and UID preconditions, status subresources, graceful deletion, finalizers
and owner-reference propagation policies. Kind-specific rules live in ``hooks``."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.kubeapi import hooks
from tests.kubeapi.clock import rfc3339, rfc3339_in
from tests.kubeapi.kinds import NAMESPACES, PODS, Kind
from tests.kubeapi.patching import apply_patch
from tests.kubeapi.status import (
    MODIFIED,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
    success,
)
from tests.kubeapi.store import Key, Obj, Store

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
FOREGROUND = "foregroundDeletion"


@dataclass(frozen=True)
class DeleteOptions:
    grace_period: int | None = None
    propagation: str | None = None  # Background (default), Foreground, Orphan
    uid: str | None = None
    resource_version: str | None = None

    @classmethod
    def parse(cls, query: Mapping[str, str], body: Mapping[str, Any] | None) -> DeleteOptions:
        body = body or {}
        pre = body.get("preconditions") or {}
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        policy = body.get("propagationPolicy", query.get("propagationPolicy"))
        if policy is None and body.get("orphanDependents", query.get("orphanDependents")) in (True, "true"):
            policy = "Orphan"
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise bad_request(f'propagationPolicy: Unsupported value: "{policy}"')
        return cls(None if grace is None else int(grace), policy, pre.get("uid"), pre.get("resourceVersion"))


def _key(kind: Kind, namespace: str, name: str) -> Key:
    return (namespace if kind.namespaced else "", name)


class Api:
    """The generic verbs over a Store. Every method runs on the emulator's event loop."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- reads ---------------------------------------------------------------------------------
    def get(self, kind: Kind, namespace: str, name: str) -> Obj:
        obj = self.store.get(kind, *_key(kind, namespace, name))
        if obj is None:
            raise not_found(kind.plural, name, kind.group)
        return obj

    # -- create --------------------------------------------------------------------------------
    def _check_namespace(self, kind: Kind, namespace: str, name: str) -> None:
        if not kind.namespaced:
            return
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise not_found("namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise forbidden(
                kind.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
                kind.group,
            )

    def create(self, kind: Kind, namespace: str, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        meta = dict(body.get("metadata") or {})
        if kind.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        name = meta.get("name") or ""
        if not name:
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise invalid(
                    kind.kind,
                    "",
                    [
                        (
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required",
                        )
                    ],
                    kind.group,
                )
            name = prefix + "".join(random.choices(_GENERATE_ALPHABET, k=5))
        problem = kind.name_problem(name)
        if problem:
            raise invalid(
                kind.kind,
                name,
                [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {problem}')],
                kind.group,
            )
        self._check_namespace(kind, namespace, name)
        key = _key(kind, namespace, name)
        if self.store.get(kind, *key) is not None:
            raise already_exists(kind.plural, name, kind.group)
        meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=rfc3339(), generation=1)
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        obj = {**body, "apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}
        obj = hooks.for_kind(kind).on_create(self, obj)
        return self.store.commit(kind, key, obj)

    # -- update and patch ----------------------------------------------------------------------
    def update(self, kind: Kind, namespace: str, name: str, body: Any, subresource: str = "") -> Obj:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        old = self.get(kind, namespace, name)
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if kind.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        rv = meta.get("resourceVersion") or ""
        if not rv and kind.custom:
            raise invalid(
                kind.kind,
                name,
                [
                    (
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
                kind.group,
            )
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(kind.plural, name, MODIFIED, kind.group)
        uid = meta.get("uid") or ""
        if uid and uid != old["metadata"]["uid"]:
            raise conflict(
                kind.plural,
                name,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {old['metadata']['uid']}",
                kind.group,
            )
        if subresource == "status":
            new = {**old, "status": body.get("status") or {}}
        else:
            new_meta = dict(meta)
            for k in (
                "name",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "resourceVersion",
            ):
                if k in old["metadata"]:
                    new_meta[k] = old["metadata"][k]
                else:
                    new_meta.pop(k, None)
            if kind.namespaced:
                new_meta["namespace"] = namespace
            new = {**body, "apiVersion": kind.api_version, "kind": kind.kind, "metadata": new_meta}
            if kind.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            new = hooks.for_kind(kind).on_update(self, old, new)
            if new.get("spec") != old.get("spec"):
                new_meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        return self.write(kind, old, new)

    def write(self, kind: Kind, old: Obj, new: Obj) -> Obj:
        """Store an accepted new version; a no-op update keeps the resourceVersion, as the apiserver does."""
        if new == old:
            return old
        meta = new["metadata"]
        key = _key(kind, meta.get("namespace", ""), meta["name"])
        finalized = not meta.get("finalizers") and not meta.get("deletionGracePeriodSeconds")
        if meta.get("deletionTimestamp") and finalized and kind is not NAMESPACES:
            return self.store.commit(kind, key, None)
        return self.store.commit(kind, key, new)

    def patch(
        self, kind: Kind, namespace: str, name: str, content_type: str, patch: Any, subresource: str = ""
    ) -> Obj:
        old = self.get(kind, namespace, name)
        patched = apply_patch(content_type, old, patch, custom=kind.custom)
        if not isinstance(patched, dict):
            raise bad_request("the patch did not produce an object")
        meta = patched.get("metadata") or {}
        if kind.custom and not meta.get("resourceVersion"):
            patched = {**patched, "metadata": {**meta, "resourceVersion": old["metadata"]["resourceVersion"]}}
        return self.update(kind, namespace, name, patched, subresource)

    # -- delete --------------------------------------------------------------------------------
    def delete(self, kind: Kind, namespace: str, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        """(the object as now stored or last seen, whether it is gone)."""
        old = self.get(kind, namespace, name)
        meta = old["metadata"]
        if opts.uid and opts.uid != meta["uid"]:
            raise conflict(
                kind.plural,
                name,
                f"Precondition failed: UID in precondition: {opts.uid}, UID in object meta: {meta['uid']}",
                kind.group,
            )
        if opts.resource_version and opts.resource_version != meta["resourceVersion"]:
            raise conflict(
                kind.plural,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{opts.resource_version}, ResourceVersion in object meta: {meta['resourceVersion']}",
                kind.group,
            )
        if kind is NAMESPACES:
            return self._terminate_namespace(old), False
        grace = hooks.for_kind(kind).grace_period(old, opts.grace_period)
        key = _key(kind, namespace, name)
        if meta.get("deletionTimestamp"):
            pending = meta.get("deletionGracePeriodSeconds") or 0
            if pending and grace < pending:  # a shorter grace period wins
                new_meta = {
                    **meta,
                    "deletionGracePeriodSeconds": grace,
                    "deletionTimestamp": rfc3339_in(grace),
                }
                return self.write(kind, old, {**old, "metadata": new_meta}), grace == 0
            return old, False
        finalizers = list(meta.get("finalizers") or [])
        if opts.propagation == "Orphan":
            self.orphan_dependents(meta["uid"])
        elif opts.propagation == "Foreground" and self.store.dependents.get(meta["uid"]):
            finalizers.append(FOREGROUND)
        if grace > 0 or finalizers:
            new_meta = {**meta, "deletionTimestamp": rfc3339_in(grace), "deletionGracePeriodSeconds": grace}
            if finalizers:
                new_meta["finalizers"] = finalizers
            return self.store.commit(kind, key, {**old, "metadata": new_meta}), False
        return self.store.commit(kind, key, None), True

    def _terminate_namespace(self, ns: Obj) -> Obj:
        """A deleted namespace turns Terminating; the collector empties it and then removes it."""
        if ns["metadata"].get("deletionTimestamp"):
            return ns
        meta = {**ns["metadata"], "deletionTimestamp": rfc3339()}
        new = {**ns, "metadata": meta, "status": {**(ns.get("status") or {}), "phase": "Terminating"}}
        return self.store.commit(NAMESPACES, ("", meta["name"]), new)

    def orphan_dependents(self, owner_uid: str) -> None:
        for dep_kind, dep_key in list(self.store.dependents.get(owner_uid, ())):
            dep = self.store.get(dep_kind, *dep_key)
            if dep is None:
                continue
            refs = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            dep_meta = {**dep["metadata"], "ownerReferences": refs}
            if not refs:
                del dep_meta["ownerReferences"]
            self.store.commit(dep_kind, dep_key, {**dep, "metadata": dep_meta})

    def delete_response(self, kind: Kind, obj: Obj, gone: bool) -> Obj:
        """Pods answer with the pod; other kinds with a Status once gone, else with the object."""
        if kind is PODS or not gone:
            return obj
        meta = obj["metadata"]
        details = {
            "name": meta["name"],
            **({"group": kind.group} if kind.group else {}),
            "kind": kind.plural,
            "uid": meta["uid"],
        }
        out = success(200, details)
        del out["code"]
        return out
