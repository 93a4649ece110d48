"""Objects of every kind under one global resourceVersion, each kind's bounded change history, and the
watchers that follow it. Stored objects are never changed in place: each write stores a new dict, so
history entries and watch queues can share them."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from tests.kubeapi.kinds import Kind
from tests.kubeapi.selectors import Selector
from tests.kubeapi.status import expired

Key = tuple[str, str]  # (namespace or "", name)
Obj = dict[str, Any]
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
FIRST_RESOURCE_VERSION = 1000
SLOW_WATCHER_LINES = 200_000  # a watcher this far behind is closed, as the apiserver drops slow watchers


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class Entry:
    """One stored version of an object and its JSON, encoded at most once."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = encode(self.obj)
        return self._raw


class Change:
    __slots__ = ("entry", "prev", "rv", "type")

    def __init__(self, rv: int, type_: str, entry: Entry, prev: Obj | None) -> None:
        self.rv, self.type, self.entry, self.prev = rv, type_, entry, prev

    def line(self, type_: str | None = None) -> bytes:
        return b'{"type":"' + (type_ or self.type).encode() + b'","object":' + self.entry.raw() + b"}\n"


class Watcher:
    """One open watch: the lines waiting to be written, and a flag the stream waits on."""

    def __init__(self, kind: Kind, namespace: str, selector: Selector, bookmarks: bool) -> None:
        self.kind, self.namespace, self.selector, self.bookmarks = kind, namespace, selector, bookmarks
        self.pending: list[bytes] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.abort = False  # close the connection without ending the chunked body

    def matches(self, obj: Obj) -> bool:
        if self.namespace and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.selector.matches(obj)

    def offer(self, change: Change) -> None:
        """A change seen through the selector: leaving the selection is a DELETED, entering it an ADDED."""
        now = change.type != DELETED and self.matches(change.entry.obj)
        if change.type == DELETED:
            if self.matches(change.entry.obj):
                self.push(change.line())
            return
        before = change.prev is not None and self.matches(change.prev)
        if now:
            self.push(change.line(MODIFIED if before else ADDED))
        elif before:
            self.push(change.line(DELETED))

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.pending.append(line)
        if len(self.pending) > SLOW_WATCHER_LINES:
            self.close()
        self.wake.set()

    def close(self, *, abort: bool = False) -> None:
        self.closed = True
        self.abort = self.abort or abort
        self.wake.set()


class Table:
    def __init__(self, kind: Kind, floor: int) -> None:
        self.kind = kind
        self.objects: dict[Key, Entry] = {}
        self.history: deque[Change] = deque()
        self.floor = floor  # resuming a watch from a resourceVersion below this is 410 Expired
        self.watchers: set[Watcher] = set()


Listener = Callable[[Kind, str, Obj, Obj | None], None]


class Store:
    def __init__(self, kinds: Iterable[Kind], *, history_limit: int = 20_000) -> None:
        self.rv = FIRST_RESOURCE_VERSION
        self.history_limit = history_limit
        self.tables = {(k.group, k.plural): Table(k, self.rv) for k in kinds}
        self.uids: dict[str, tuple[Kind, Key]] = {}
        self.dependents: dict[str, set[tuple[Kind, Key]]] = {}
        self.listeners: list[Listener] = []
        self.journal: Callable[[Kind, Key, bytes | None, int], None] | None = None  # the emulator's etcd

    def kinds(self) -> list[Kind]:
        return [t.kind for t in self.tables.values()]

    def table(self, kind: Kind) -> Table:
        return self.tables[(kind.group, kind.plural)]

    def get(self, kind: Kind, namespace: str, name: str) -> Obj | None:
        entry = self.table(kind).objects.get((namespace, name))
        return None if entry is None else entry.obj

    def by_uid(self, uid: str) -> Obj | None:
        where = self.uids.get(uid)
        return None if where is None else self.get(where[0], *where[1])

    def items(self, kind: Kind, namespace: str = "", selector: Selector | None = None) -> list[Entry]:
        table = self.table(kind)
        keys = sorted(table.objects)
        out = []
        for key in keys:
            if namespace and key[0] != namespace:
                continue
            entry = table.objects[key]
            if selector is None or selector.matches(entry.obj):
                out.append(entry)
        return out

    def commit(self, kind: Kind, key: Key, new: Obj | None) -> Obj:
        """Store ``new`` (None deletes) under the next resourceVersion; tell watchers and listeners."""
        table = self.table(kind)
        old_entry = table.objects.get(key)
        old = None if old_entry is None else old_entry.obj
        self.rv += 1
        if new is None:
            if old is None:
                raise KeyError(key)
            stored = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self.rv)}}
            del table.objects[key]
            self.uids.pop(old["metadata"].get("uid", ""), None)
            change = Change(self.rv, DELETED, Entry(stored), old)
        else:
            stored = {**new, "metadata": {**new["metadata"], "resourceVersion": str(self.rv)}}
            entry = Entry(stored)
            table.objects[key] = entry
            self.uids[stored["metadata"]["uid"]] = (kind, key)
            change = Change(self.rv, ADDED if old is None else MODIFIED, entry, old)
        self._index_owners(kind, key, old, None if new is None else stored)
        if self.journal is not None:
            self.journal(kind, key, None if new is None else change.entry.raw(), self.rv)
        table.history.append(change)
        while len(table.history) > self.history_limit:
            table.floor = table.history.popleft().rv
        for w in table.watchers:
            w.offer(change)
        for listener in self.listeners:
            listener(kind, change.type, stored, old)
        return stored

    def restore(self, objects: dict[tuple[Kind, Key], Obj], rv: int) -> None:
        """Objects read back from the journal, each at its own resourceVersion; no history before
        them (a watch resumed from an older version gets 410 Expired, as after an apiserver restart)."""
        for (kind, key), obj in objects.items():
            self.table(kind).objects[key] = Entry(obj)
            self.uids[obj["metadata"]["uid"]] = (kind, key)
            self._index_owners(kind, key, None, obj)
        self.rv = max(self.rv, rv)
        for table in self.tables.values():
            table.floor = self.rv

    def _index_owners(self, kind: Kind, key: Key, old: Obj | None, new: Obj | None) -> None:
        for obj, add in ((old, False), (new, True)):
            for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
                uid = ref.get("uid", "")
                if add:
                    self.dependents.setdefault(uid, set()).add((kind, key))
                elif uid in self.dependents:
                    self.dependents[uid].discard((kind, key))
                    if not self.dependents[uid]:
                        del self.dependents[uid]

    def changes_since(self, kind: Kind, rv: int) -> list[Change]:
        """The kind's changes after ``rv``; 410 Expired when history no longer reaches back that far."""
        table = self.table(kind)
        if rv < table.floor:
            raise expired(f"too old resource version: {rv} ({table.floor})")
        out: list[Change] = []
        for change in reversed(table.history):
            if change.rv <= rv:
                break
            out.append(change)
        out.reverse()
        return out

    def compact(self, kinds: Iterable[Kind] | None = None) -> int:
        """Forget all history: a watch resumed from any older resourceVersion gets 410 Expired."""
        for table in self.tables.values():
            if kinds is None or table.kind in kinds:
                table.history.clear()
                table.floor = self.rv
        return self.rv

    def all_watchers(self) -> list[Watcher]:
        return [w for t in self.tables.values() for w in t.watchers]
