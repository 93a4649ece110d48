"""Minimal controllers for the workload kinds: each makes the pods (and intermediate objects) its
real counterpart makes, named, labelled and owned as it does, and writes the status it would write
from its pods' phases. They react to committed changes after the request that made them, as the
garbage collector does; they never schedule (pods keep their template's ``schedulerName`` and wait
for whatever scheduler owns that name)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

from tests.kubeapi.crud import Api, DeleteOptions
from tests.kubeapi.kinds import PODS, Kind
from tests.kubeapi.status import ApiError
from tests.kubeapi.store import DELETED, Key, Obj
from tests.kubeapi.workload_kinds import BUILTIN_WORKLOADS, CUSTOM_WORKLOADS

Schedule = Callable[[Callable[[], None]], Any]
Reconcile = Callable[["Ctx", Obj], None]
_BY_TYPE = {(k.api_version, k.kind): k for k in (*BUILTIN_WORKLOADS, *CUSTOM_WORKLOADS)}


def template_hash(template: Any) -> str:
    """A short stable hash of a pod template (pod-template-hash, controller-revision-hash)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(c for c in digest if c in "bcdfghjklmnpqrstvwxz2456789")[:10] or digest[:10]


def owner_ref(kind: Kind, obj: Obj) -> Obj:
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return phase(pod) == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def is_active(pod: Obj) -> bool:
    """Neither finished nor being deleted: what a controller counts as one of its replicas."""
    return phase(pod) not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


class Ctx:
    """What a reconcile may do: read children, create and delete objects, write status."""

    def __init__(self, api: Api) -> None:
        self.api, self.store = api, api.store

    def children(self, kind: Kind, owner: Obj) -> list[Obj]:
        uid = owner["metadata"]["uid"]
        out = []
        for k, key in self.store.dependents.get(uid, ()):
            obj = self.store.get(k, *key) if k is kind else None
            if obj is not None and any(
                r.get("uid") == uid and r.get("controller")
                for r in obj["metadata"].get("ownerReferences") or []
            ):
                out.append(obj)
        return sorted(out, key=lambda o: (o["metadata"]["creationTimestamp"], o["metadata"]["name"]))

    def create_from_template(
        self,
        owner_kind: Kind,
        owner: Obj,
        template: Obj | None,
        *,
        labels: dict[str, str],
        annotations: dict[str, str] | None = None,
        name: str = "",
        generate_name: str = "",
        spec_extra: dict[str, Any] | None = None,
    ) -> Obj | None:
        """A pod from a pod template, owned by ``owner``; None if the server refused it (a real
        controller records an event and tries again later)."""
        tmpl = copy.deepcopy(template or {})
        meta = tmpl.get("metadata") or {}
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **({"name": name} if name else {"generateName": generate_name}),
                "labels": {**(meta.get("labels") or {}), **labels},
                "annotations": {**(meta.get("annotations") or {}), **(annotations or {})},
                "ownerReferences": [owner_ref(owner_kind, owner)],
            },
            "spec": {**(tmpl.get("spec") or {}), **(spec_extra or {})},
        }
        return self.create(PODS, owner["metadata"]["namespace"], body)

    def create(self, kind: Kind, namespace: str, body: Obj) -> Obj | None:
        try:
            return self.api.create(kind, namespace, body)
        except ApiError:
            return None

    def delete(self, kind: Kind, obj: Obj) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return
        with contextlib.suppress(ApiError):
            self.api.delete(
                kind, meta.get("namespace", ""), meta["name"], DeleteOptions(propagation="Background")
            )

    def set_status(self, kind: Kind, obj: Obj, status: Obj) -> None:
        if (obj.get("status") or {}) == status:
            return
        meta = obj["metadata"]
        with contextlib.suppress(ApiError):
            self.api.update(
                kind, meta.get("namespace", ""), meta["name"], {**obj, "status": status}, "status"
            )

    def update_spec(self, kind: Kind, obj: Obj, spec: Obj) -> None:
        meta = obj["metadata"]
        with contextlib.suppress(ApiError):
            self.api.update(kind, meta.get("namespace", ""), meta["name"], {**obj, "spec": spec})


class Controllers:
    """Runs each kind's reconcile once per batch of changes to the object or to what it owns."""

    def __init__(self, api: Api, schedule: Schedule) -> None:
        from tests.kubeapi import ctl_apps, ctl_appwrapper, ctl_kthena, ctl_lws, ctl_ray, ctl_training

        self.ctx = Ctx(api)
        self.store = api.store
        self.reconcilers: dict[Kind, Reconcile] = {
            **ctl_apps.RECONCILERS,
            **ctl_ray.RECONCILERS,
            **ctl_lws.RECONCILERS,
            **ctl_training.RECONCILERS,
            **ctl_appwrapper.RECONCILERS,
            **ctl_kthena.RECONCILERS,
        }
        self._schedule = schedule
        self._due: dict[tuple[Kind, Key], None] = {}
        self._armed = False
        self.store.listeners.append(self._on_change)

    def _on_change(self, kind: Kind, type_: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        if type_ != DELETED and kind in self.reconcilers:
            self._defer(kind, (ns, meta["name"]))
        for ref in self._owners(obj, old):
            owner_kind = _BY_TYPE.get((ref.get("apiVersion", ""), ref.get("kind", "")))
            if owner_kind is not None:
                self._defer(owner_kind, (ns, ref.get("name", "")))

    def resync(self) -> None:
        """Every workload object reconciled (after a restart from the journal)."""
        for kind in self.reconcilers:
            for entry in self.store.items(kind):
                meta = entry.obj["metadata"]
                self._defer(kind, (meta.get("namespace", ""), meta["name"]))

    @staticmethod
    def _owners(obj: Obj, old: Obj | None) -> Iterable[Obj]:
        yield from obj["metadata"].get("ownerReferences") or []
        if old is not None:
            yield from old["metadata"].get("ownerReferences") or []

    def _defer(self, kind: Kind, key: Key) -> None:
        self._due[(kind, key)] = None
        if not self._armed:
            self._armed = True
            self._schedule(self._run)

    def _run(self) -> None:
        self._armed = False
        due, self._due = self._due, {}
        for kind, key in due:
            obj = self.store.get(kind, *key)
            if obj is None or obj["metadata"].get("deletionTimestamp"):
                continue
            self.reconcilers[kind](self.ctx, obj)
