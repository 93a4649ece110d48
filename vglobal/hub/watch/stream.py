"""One client's watch: what it asked for checked, the log read up to the feed, then the feed followed.

Blocking, and kept apart from the gRPC handler (watch/serve.py), which steps it in a thread pool and
turns its items into messages and its errors into status codes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

import grpc

from vglobal.hub.context import HubContext
from vglobal.hub.errors import Coded, TooLarge
from vglobal.hub.watch.feed import WatchFeed
from vglobal.model.records import JobChange
from vglobal.store.engine import session_scope
from vglobal.store.repo import job_changes as changes_repo
from vglobal.store.repo.job_changes import Filters

PAGE = 1000  # changes read from the log at once while catching up
BOOKMARK_EVERY = 5.0  # seconds without a matching change before a BOOKMARK tells the revision


@dataclass(frozen=True)
class Bookmark:
    """Every matching change up to ``revision`` has been sent."""

    revision: int


WatchItem = JobChange | Bookmark


class OutOfRange(Coded):
    def __init__(self, message: str) -> None:
        super().__init__(grpc.StatusCode.OUT_OF_RANGE, message)


RETRY_WATCH = 5.0  # seconds a refused watch is told to wait before it asks again


class WatchesBusy(TooLarge):
    """No watch now; ``wait`` goes to the caller as ``retry-after-ms``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.wait = RETRY_WATCH


class WatchLimit:
    """How many streams one hub serves at once (each holds a thread of the watch pool while it
    waits), and how many of them one caller may hold, so that no caller can take them all."""

    def __init__(self, most: int, share: int) -> None:
        self.most, self.share = most, max(1, min(share, most))
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._total = 0

    def enter(self, who: str) -> None:
        with self._lock:
            if self._held.get(who, 0) >= self.share:
                raise WatchesBusy(
                    f"{who} holds {self.share} watches already, its share of this hub's "
                    f"{self.most}: close one, or retry in {RETRY_WATCH:.0f} s"
                )
            if self._total >= self.most:
                raise WatchesBusy(
                    f"this hub serves {self.most} watches at once already: retry in {RETRY_WATCH:.0f} s"
                )
            self._held[who] = self._held.get(who, 0) + 1
            self._total += 1

    def leave(self, who: str) -> None:
        with self._lock:
            self._total -= 1
            left = self._held.get(who, 0) - 1
            if left > 0:
                self._held[who] = left
            else:
                self._held.pop(who, None)


def _catch_up(ctx: HubContext, filters: Filters, sent: int, until: int) -> Iterator[JobChange]:
    """The log's changes in (sent, until]; OUT_OF_RANGE if pruning overtakes the reading."""
    while sent < until:
        with session_scope(ctx.sessions) as session:
            page = changes_repo.read(sent, until=until, filters=filters, limit=PAGE, session=session)
            pruned, _ = changes_repo.bounds(session=session)
        if pruned > sent:
            raise OutOfRange(f"revision {sent} was pruned from the watch log while being read: list again")
        yield from page
        sent = page[-1].revision if len(page) == PAGE else until


def watch(
    ctx: HubContext,
    feed: WatchFeed,
    filters: Filters,
    from_revision: int | None,
    *,
    active: Callable[[], bool],
) -> Generator[WatchItem, None, None]:
    """A bookmark of the revision it starts from, then every change matching ``filters`` after
    ``from_revision`` (None: from now), in order, and bookmarks while nothing matches; ends when
    ``active()`` turns false. Raises OutOfRange for a revision the log no longer (or does not
    yet) hold, TooLarge when the reader falls behind."""
    with session_scope(ctx.sessions) as session:
        pruned, last = changes_repo.bounds(session=session)
    if from_revision is not None and from_revision < 0:
        raise OutOfRange(f"from_revision: {from_revision} is negative")
    # 0 is a revision like any other (a list of an empty log returns it): only "unset" means now.
    sent = last if from_revision is None else from_revision
    if sent < pruned:
        raise OutOfRange(
            f"from_revision: {sent} is older than the watch log keeps (from {pruned}): list again "
            "and watch from the revision the list returns"
        )
    if sent > last:
        raise OutOfRange(f"from_revision: {sent} is newer than the latest revision, {last}")
    sub = feed.subscribe(filters)
    try:
        yield Bookmark(sent)  # a client that started "from now" knows where to resume
        for change in _catch_up(ctx, filters, sent, sub.start):
            sent = change.revision
            yield change
        sent = max(sent, sub.start)
        spoke = time.monotonic()
        while active():
            changes = feed.take(sub, BOOKMARK_EVERY)
            if sub.overflowed:
                raise TooLarge(
                    f"the watch fell more than {feed.size} changes behind: resume from revision {sent}"
                )
            for change in changes:
                if change.revision > sent:
                    sent = change.revision
                    spoke = time.monotonic()
                    yield change
            if sub.place > sent and time.monotonic() - spoke >= BOOKMARK_EVERY:
                # Changes it does not match went by: tell it where it stands.
                sent = sub.place
                spoke = time.monotonic()
                yield Bookmark(sent)
    finally:
        feed.unsubscribe(sub)
