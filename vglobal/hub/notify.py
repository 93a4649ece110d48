"""Postgres LISTEN/NOTIFY wake-ups. The database stays the truth: a missed wake-up only delays."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

import psycopg
import sqlalchemy as sa
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

DISPATCH = "vglobal_dispatch"  # something to admit: a submit, a finish, a cluster change
DELIVER = "vglobal_deliver"  # bindings to push to agents: dispatched, re-queued, cancelled
JOB_CHANGES = "vglobal_job_changes"  # a job changed (sent by the triggers of migration 0006)
REVISIONS = "vglobal_job_revisions"  # job changes got their revisions: watchers have news
WORKFLOWS = "vglobal_workflows"  # a CronJob or JobFlow was applied, changed or deleted
# Besides DELIVER, from a writer that may have made a run stop being current (cancel, delete,
# re-queue): agent streams check every run they know of, not only what is new to deliver.
FENCE = "vglobal_fence"


def notify(channel: str, *, session: Session, payload: str = "") -> None:
    """Queued in the caller's transaction and delivered only when it commits; ``payload`` is
    handed to the channel's subscribers (see ``deliver_to``)."""
    session.execute(sa.text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})


# A NOTIFY payload is at most 8,000 bytes: a longer list of clusters wakes every stream instead.
_MAX_PAYLOAD = 7000


def deliver_to(clusters: Iterable[str]) -> str:
    """The DELIVER payload that wakes only these clusters' agent streams ("": every stream)."""
    names = ",".join(sorted(set(clusters)))
    return names if len(names) <= _MAX_PAYLOAD else ""


def delivered_to(payload: str) -> frozenset[str] | None:
    """The clusters a DELIVER payload names; None: every cluster."""
    return frozenset(payload.split(",")) if payload else None


class Wakeups:
    """A count per channel, raised by the listener thread (or locally) and waited on by loops."""

    def __init__(self, channels: Iterable[str]) -> None:
        self._cond = threading.Condition()
        self._seq = dict.fromkeys(channels, 0)
        self._callbacks: dict[str, list[Callable[[str], None]]] = {c: [] for c in self._seq}

    @property
    def channels(self) -> list[str]:
        return list(self._seq)

    def fire(self, channel: str, payload: str = "") -> None:
        with self._cond:
            self._seq[channel] += 1
            self._cond.notify_all()
        for callback in self._callbacks[channel]:
            callback(payload)

    def subscribe(self, channel: str, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with the payload (from the firing thread; it must not block) on every
        fire of ``channel``."""
        self._callbacks[channel].append(callback)

    def seq(self, channel: str) -> int:
        return self._seq[channel]

    def wait(self, channel: str, seen: int, timeout: float) -> int:
        """Block until the channel fires after ``seen`` or the timeout passes; returns the new sequence."""
        return self.wait_any({channel: seen}, timeout)[channel]

    def wait_any(self, seen: dict[str, int], timeout: float) -> dict[str, int]:
        """``wait`` on several channels: until one of them fires after its ``seen``."""
        with self._cond:
            self._cond.wait_for(lambda: any(self._seq[c] != n for c, n in seen.items()), timeout=timeout)
            return {c: self._seq[c] for c in seen}


def listen_forever(dsn: str, wakeups: Wakeups, stop: threading.Event) -> None:
    """Forward NOTIFYs to ``wakeups``; reconnects after errors."""
    channels = wakeups.channels
    while not stop.is_set():
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                for c in channels:
                    conn.execute(f"LISTEN {c}")
                while not stop.is_set():
                    for note in conn.notifies(timeout=0.5):
                        wakeups.fire(note.channel, note.payload)
        except psycopg.Error as exc:
            log.warning("notification listener lost its connection: %s", exc)
            for c in channels:
                wakeups.fire(c)  # let the loops poll while we reconnect
            time.sleep(1.0)
