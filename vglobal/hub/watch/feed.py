"""Each replica's feed of job changes: one reader of the change log for all the watch streams it serves.

The feed reads the changes numbered since its last read (woken by the change-log loop's NOTIFY)
and hands each subscriber the ones its filters match, into a bounded queue: a subscriber whose
queue is full is dropped and told so (its stream ends with RESOURCE_EXHAUSTED), so a slow reader
costs a bounded amount of memory. Without subscribers the feed only keeps up with the last revision.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from vglobal.hub.context import HubContext
from vglobal.hub.notify import REVISIONS
from vglobal.model.records import JobChange
from vglobal.store.engine import session_scope
from vglobal.store.repo import job_changes as changes_repo
from vglobal.store.repo.job_changes import Filters

log = logging.getLogger(__name__)

PAGE = 2000  # changes read at once
POLL = 1.0  # seconds: a NOTIFY lost while the listener reconnects delays events this long at most


@dataclass(eq=False)
class Subscription:
    filters: Filters
    start: int  # changes numbered above this come through the queue; the stream reads the rest
    cap: int
    queue: deque[JobChange] = field(default_factory=deque)
    overflowed: bool = False

    def offer(self, changes: Sequence[JobChange]) -> bool:
        """Queue the matching changes; False (and nothing queued) when they do not fit."""
        matching = [c for c in changes if self.filters.match(c)]
        if len(self.queue) + len(matching) > self.cap:
            self.overflowed = True
            self.queue.clear()
            return False
        self.queue.extend(matching)
        return True


class WatchFeed:
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self._cond = threading.Condition()
        self._subs: set[Subscription] = set()
        self.last = 0  # every subscriber has been offered the changes up to this revision

    # ---- the reader thread

    def run(self, stop: threading.Event) -> None:
        seen = self.ctx.wakeups.seq(REVISIONS)
        while not stop.is_set():
            try:
                self.poll()
            except Exception:
                log.exception("watch feed: reading the change log failed")
                stop.wait(POLL)
            seen = self.ctx.wakeups.wait(REVISIONS, seen, timeout=POLL)
        with self._cond:
            self._cond.notify_all()

    def poll(self) -> None:
        """Offer the changes numbered since the last poll to the subscribers."""
        with self._cond:
            after = self.last
            idle = not self._subs
        if idle:
            with session_scope(self.ctx.sessions) as session:
                last = changes_repo.last_revision(session=session)
            with self._cond:
                if not self._subs:
                    self.last = max(self.last, last)
                    return
        while True:
            with session_scope(self.ctx.sessions) as session:
                changes = changes_repo.read(after, session=session, limit=PAGE)
            if not changes:
                return
            with self._cond:
                for sub in list(self._subs):
                    if not sub.offer(changes):
                        self._subs.discard(sub)
                self.last = after = changes[-1].revision
                self._cond.notify_all()
            if len(changes) < PAGE:
                return

    # ---- the streams' side

    def subscribe(self, filters: Filters, *, cap: int) -> Subscription:
        with self._cond:
            sub = Subscription(filters=filters, start=self.last, cap=cap)
            self._subs.add(sub)
            return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._cond:
            self._subs.discard(sub)

    def take(self, sub: Subscription, timeout: float) -> tuple[list[JobChange], int]:
        """The changes queued for ``sub`` (waiting up to ``timeout`` for some), and the revision
        up to which it has been offered everything: with an empty queue, nothing it matches up to
        that revision is left unsent. Check ``sub.overflowed`` after."""
        with self._cond:
            self._cond.wait_for(lambda: bool(sub.queue) or sub.overflowed, timeout=timeout)
            out = list(sub.queue)
            sub.queue.clear()
            return out, self.last
