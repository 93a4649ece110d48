"""The emulator's etcd: every committed change appended to a file, read back by a restarted emulator
(``--state FILE``), so that killing the process models an API server restart with its etcd kept.

Each line is a header (kind, key, deleted) and the stored object as the watchers get it. A write
reaches the operating system before the request is answered (unbuffered), so a SIGKILL loses
nothing the server acknowledged. On start the file is read, the last version of each object kept,
and the file rewritten with just those (its size stays that of the live objects)."""

from __future__ import annotations

import calendar
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from tests.kubeapi.kinds import Kind
from tests.kubeapi.store import Key, Obj, encode


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: BinaryIO | None = None

    def load(self, kinds: Iterable[Kind]) -> tuple[dict[tuple[Kind, Key], Obj], int]:
        """The objects the file holds (none when there is no file yet), by kind and key, and the
        newest resourceVersion it saw (a deletion's included)."""
        by_name = {(k.group, k.plural): k for k in kinds}
        out: dict[tuple[Kind, Key], Obj] = {}
        rv = 0
        if not self.path.exists():
            return out, rv
        with self.path.open("rb") as f:
            for line in f:
                head, sep, body = line.rstrip(b"\n").partition(b"\t")
                if not sep or not line.endswith(b"\n"):
                    break  # a line cut short by the kill: never acknowledged
                h = json.loads(head)
                rv = max(rv, int(h["rv"]))
                if "g" not in h:
                    continue
                kind = by_name[(h["g"], h["p"])]
                key = (h["ns"], h["n"])
                if h.get("d"):
                    out.pop((kind, key), None)
                else:
                    try:
                        out[(kind, key)] = json.loads(body)
                    except ValueError:
                        break
        return out, rv

    def open(self, objects: dict[tuple[Kind, Key], Obj], rv: int) -> None:
        """Rewrite the file with ``objects`` at ``rv``, then append every later change."""
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            f.write(encode({"rv": rv}) + b"\t\n")
            for (kind, key), obj in objects.items():
                f.write(_line(kind, key, encode(obj), int(obj["metadata"].get("resourceVersion") or 0)))
        os.replace(tmp, self.path)
        self._file = self.path.open("ab", buffering=0)

    def append(self, kind: Kind, key: Key, raw: bytes | None, rv: int) -> None:
        if self._file is not None:
            self._file.write(_line(kind, key, raw, rv))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _line(kind: Kind, key: Key, raw: bytes | None, rv: int) -> bytes:
    head: dict[str, Any] = {"rv": rv, "g": kind.group, "p": kind.plural, "ns": key[0], "n": key[1]}
    if raw is None:
        head["d"] = 1
    return encode(head) + b"\t" + (raw or b"{}") + b"\n"


def seconds_left(pod: Obj, duration: float) -> float:
    """How much of its run a Running pod has left by the wall clock (its startTime is kept)."""
    started = (pod.get("status") or {}).get("startTime")
    if not started:
        return duration
    at = calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ"))
    return max(0.0, at + duration - time.time())
