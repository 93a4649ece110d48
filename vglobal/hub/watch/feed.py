"""Each replica's feed of job changes: one reader of the change log for all the watch streams it serves.

The feed reads the changes numbered since its last read (woken by the change-log loop's NOTIFY)
into one buffer of the latest ``watch_buffer`` changes, shared by every stream. Each subscriber
keeps only its place in it: one whose place the buffer has moved past (it read more slowly than
changes came) is cut off, and resumes by reading the log from the database, so a slow reader
costs no memory beyond the shared buffer. Without subscribers the feed only keeps the last revision.
"""

from __future__ import annotations

import bisect
import logging
import threading
from dataclasses import dataclass

from vglobal.hub.context import HubContext
from vglobal.hub.notify import REVISIONS
from vglobal.model.records import JobChange
from vglobal.store.engine import session_scope
from vglobal.store.repo import job_changes as changes_repo
from vglobal.store.repo.job_changes import Filters

log = logging.getLogger(__name__)

PAGE = 2000  # changes read at once
POLL = 1.0  # seconds: a NOTIFY lost while the listener reconnects delays events this long at most
TAKE = 1000  # changes a stream looks through at once
CATCH_UP = 0.5  # seconds a stream about to fall out of the buffer is given to catch up


def _revision(c: JobChange) -> int:
    return c.revision


@dataclass(eq=False)
class Subscription:
    filters: Filters
    start: int  # changes up to this revision the stream reads from the log itself
    place: int  # the stream has looked through the buffer up to this revision
    overflowed: bool = False


class WatchFeed:
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.size = ctx.settings.watch_buffer
        self._cond = threading.Condition()
        self._subs: set[Subscription] = set()
        self._buffer: list[JobChange] = []  # in revision order, at most 2 x size (trimmed to size)
        self.last = 0  # the buffer holds every change up to this revision (the newest ``size`` of them)
        self._pokes = 0

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
        """Add the changes numbered since the last poll to the buffer."""
        with self._cond:
            after = self.last
            idle = not self._subs
        if idle:
            with session_scope(self.ctx.sessions) as session:
                last = changes_repo.last_revision(session=session)
            with self._cond:
                if not self._subs:
                    self._buffer.clear()
                    self.last = max(self.last, last)
                    return
        page = max(min(PAGE, self.size), 1)
        while True:
            with session_scope(self.ctx.sessions) as session:
                changes = changes_repo.read(after, session=session, limit=page)
            if not changes:
                return
            with self._cond:
                self._buffer.extend(changes)
                self.last = after = changes[-1].revision
                self._cond.notify_all()
                if len(self._buffer) > 2 * self.size:
                    self._trim()
            if len(changes) < page:
                return

    def _trim(self) -> None:
        """Keep the newest ``size`` changes. Streams that have not looked at the others yet get a
        moment (a reader that keeps up is not cut off by a burst); those still behind are cut."""
        kept_from = self._buffer[-self.size].revision

        def behind() -> list[Subscription]:
            return [s for s in self._subs if s.place < kept_from - 1]

        self._cond.wait_for(lambda: not behind(), timeout=CATCH_UP)
        for sub in behind():
            sub.overflowed = True
            self._subs.discard(sub)
        del self._buffer[: -self.size]
        self._cond.notify_all()

    # ---- the streams' side

    @property
    def subscribers(self) -> int:
        with self._cond:
            return len(self._subs)

    def subscribe(self, filters: Filters) -> Subscription:
        with self._cond:
            sub = Subscription(filters=filters, start=self.last, place=self.last)
            self._subs.add(sub)
            return sub

    def poke(self) -> None:
        """Wake every stream waiting in ``take`` (one of them has ended: it sees that at once)."""
        with self._cond:
            self._pokes += 1
            self._cond.notify_all()

    def unsubscribe(self, sub: Subscription) -> None:
        with self._cond:
            self._subs.discard(sub)

    def take(self, sub: Subscription, timeout: float) -> list[JobChange]:
        """The next changes ``sub`` matches (waiting up to ``timeout`` for any change); after it,
        ``sub.place`` says up to where it has looked. Returns nothing once the feed cut ``sub``
        off (``sub.overflowed``) for falling further behind than the buffer reaches."""
        with self._cond:
            pokes = self._pokes
            self._cond.wait_for(
                lambda: self.last > sub.place or sub.overflowed or self._pokes != pokes, timeout=timeout
            )
            if sub.overflowed:
                return []
            at = bisect.bisect_right(self._buffer, sub.place, key=_revision)
            seen = self._buffer[at : at + TAKE]
            if seen:
                sub.place = seen[-1].revision
                self._cond.notify_all()  # the reader may wait for this stream to catch up
            return [c for c in seen if sub.filters.match(c)]
