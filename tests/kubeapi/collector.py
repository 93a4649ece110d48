"""The background controllers of the control plane that the emulator keeps: the garbage collector
(owner references: background, foreground and orphan deletion, dangling owners) and the namespace
controller (a deleted namespace empties, then goes)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from tests.kubeapi.crud import FOREGROUND, Api, DeleteOptions
from tests.kubeapi.kinds import NAMESPACES, Kind
from tests.kubeapi.status import ApiError
from tests.kubeapi.store import DELETED, Key, Obj

Schedule = Callable[[Callable[[], None]], Any]


class Collector:
    """Reacts to committed changes after the request that made them (``schedule`` defers the work)."""

    def __init__(self, api: Api, schedule: Schedule) -> None:
        self.api = api
        self.store = api.store
        self._schedule = schedule
        self._work: list[Callable[[], None]] = []
        self._armed = False
        self.store.listeners.append(self._on_change)

    def _defer(self, fn: Callable[[], None]) -> None:
        self._work.append(fn)
        if not self._armed:
            self._armed = True
            self._schedule(self._run)

    def _run(self) -> None:
        self._armed = False
        work, self._work = self._work, []
        for fn in work:
            with contextlib.suppress(ApiError):  # the object changed meanwhile (already gone, say)
                fn()

    def _on_change(self, kind: Kind, type_: str, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid", "")
        if type_ == DELETED:
            if uid in self.store.dependents:
                self._defer(lambda: self._collect_dependents(uid))
            for ref in meta.get("ownerReferences") or []:
                owner_uid = ref.get("uid", "")
                self._defer(lambda owner_uid=owner_uid: self._release_foreground(owner_uid))
            ns = meta.get("namespace")
            if ns:
                self._defer(lambda: self._finish_namespace(ns))
            return
        refs = meta.get("ownerReferences") or []
        if refs and (old is None or (old["metadata"].get("ownerReferences") or []) != refs):
            key = (meta.get("namespace", ""), meta["name"])
            self._defer(lambda: self._collect_if_orphaned(kind, key))
        was_deleting = old is not None and old["metadata"].get("deletionTimestamp")
        if meta.get("deletionTimestamp") and not was_deleting:
            if FOREGROUND in (meta.get("finalizers") or []):
                self._defer(lambda: self._collect_dependents(uid, force=True))
            if kind is NAMESPACES:
                name = meta["name"]
                self._defer(lambda: self._purge_namespace(name))

    def _owners_alive(self, obj: Obj) -> bool:
        return any(
            self.store.by_uid(r.get("uid", "")) is not None
            and not self._being_collected(self.store.by_uid(r.get("uid", "")))
            for r in obj["metadata"].get("ownerReferences") or []
        )

    @staticmethod
    def _being_collected(owner: Obj | None) -> bool:
        return owner is not None and FOREGROUND in (owner["metadata"].get("finalizers") or [])

    def _delete(self, kind: Kind, key: Key) -> None:
        obj = self.store.get(kind, *key)
        if obj is not None and not obj["metadata"].get("deletionTimestamp"):
            self.api.delete(kind, key[0], key[1], DeleteOptions(propagation="Background"))

    def _collect_dependents(self, owner_uid: str, *, force: bool = False) -> None:
        for kind, key in list(self.store.dependents.get(owner_uid, ())):
            obj = self.store.get(kind, *key)
            if obj is not None and (force or not self._owners_alive(obj)):
                self._delete(kind, key)

    def _collect_if_orphaned(self, kind: Kind, key: Key) -> None:
        obj = self.store.get(kind, *key)
        if obj is not None and obj["metadata"].get("ownerReferences") and not self._owners_alive(obj):
            self._delete(kind, key)

    def _release_foreground(self, owner_uid: str) -> None:
        where = self.store.uids.get(owner_uid)
        owner = self.store.by_uid(owner_uid)
        if where is None or owner is None or not self._being_collected(owner):
            return
        if self.store.dependents.get(owner_uid):
            return
        meta = owner["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != FOREGROUND]
        new_meta = {**meta, "finalizers": finalizers}
        if not finalizers:
            del new_meta["finalizers"]
        self.api.write(where[0], owner, {**owner, "metadata": new_meta})

    def _purge_namespace(self, namespace: str) -> None:
        for table in self.store.tables.values():
            if table.kind.namespaced:
                for key in [k for k in table.objects if k[0] == namespace]:
                    self._delete(table.kind, key)
        self._finish_namespace(namespace)

    def _finish_namespace(self, namespace: str) -> None:
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        if any(k[0] == namespace for t in self.store.tables.values() if t.kind.namespaced for k in t.objects):
            return
        self.store.commit(NAMESPACES, ("", namespace), None)
