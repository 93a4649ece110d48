"""The one shape of the hub's leader loops: each asks whether this hub leads before every tick,
and ticks only while it does.

A ``LeaderLoop`` says what differs between loops: its tick, the channels that wake it, how far
apart its ticks are at least (``min_gap``) and at most (``max_wait``), and what it does when this
hub becomes the leader and when the hub stops. ``run_leader_loop`` runs one on a thread of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from vglobal.hub.context import HubContext
from vglobal.hub.leader import Leader

log = logging.getLogger(__name__)

# While this hub does not lead, how often it asks again.
FOLLOWER_RETRY = 1.0


class LeaderLoop:
    """What one leader loop does; subclasses set the timings and override ``tick``."""

    name = "loop"
    channels: Sequence[str] = ()
    min_gap = 0.0  # seconds between tick starts at least (a burst of notifications makes one tick)
    max_wait = 1.0  # seconds between ticks at most: a notification lost only delays
    settle = 0.0  # seconds to wait after waking before the tick, so a burst lands in one

    def tick(self, woken: bool) -> float:
        """One round of work (``woken``: a channel fired since the last); returns the seconds
        until the next is due."""
        raise NotImplementedError

    def lead(self) -> None:
        """This hub has just become the leader: another may have led meanwhile."""

    def follow(self) -> None:
        """This hub has just stopped leading: another will do this loop's work now."""

    def close(self) -> None:
        """The hub stops: finish what must be finished before another replica leads."""


@dataclass(eq=False)
class LoopState:
    """What a running loop shows of itself: how often it has asked whether this hub leads, and
    whether it has ended."""

    name: str
    checks: int = 0
    ended: threading.Event = field(default_factory=threading.Event)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def checked(self) -> None:
        with self._changed:
            self.checks += 1
            self._changed.notify_all()

    def wait_checks(self, n: int, timeout: float) -> bool:
        """Whether the loop has asked ``n`` times, waiting up to ``timeout`` seconds for it."""
        with self._changed:
            return self._changed.wait_for(lambda: self.checks >= n, timeout)


def run_leader_loop(
    loop: LeaderLoop, ctx: HubContext, leader: Leader, stop: threading.Event, state: LoopState
) -> None:
    """Call ``loop.tick(woken)`` while this hub leads, until ``stop``: at once, then whenever one
    of its channels fires (``woken`` is True) or the seconds the last tick returned have passed.

    Ticks are at least ``min_gap`` apart and at most ``max_wait``. A tick that fails is logged
    and the next comes after ``min_gap``.
    """
    seen = {c: ctx.wakeups.seq(c) for c in loop.channels}
    woken = True
    leading = False
    try:
        while not stop.is_set():
            wait = FOLLOWER_RETRY
            started = time.monotonic()
            was_leading, leading = leading, leader.check()
            state.checked()
            if leading:
                try:
                    if not was_leading:
                        loop.lead()
                    wait = min(max(loop.tick(woken), 0.0), loop.max_wait)
                except sa.exc.SQLAlchemyError as exc:
                    log.warning("%s tick failed, will retry: %s", loop.name, exc)
                    wait = loop.min_gap
                except Exception:
                    log.exception("%s tick failed", loop.name)
                    wait = loop.min_gap
            elif was_leading:
                loop.follow()
            # A follower asks again soon; only ticks are kept ``min_gap`` apart.
            gap = loop.min_gap - (time.monotonic() - started) if leading else 0.0
            if gap > 0 and stop.wait(gap):
                return
            timeout = max(wait - max(gap, 0.0), 0.0)
            if not seen:  # nothing wakes it but its timer (and the hub's stop)
                if stop.wait(timeout):
                    return
                continue
            now = ctx.wakeups.wait_any(seen, timeout)
            woken = now != seen
            seen = now
            if loop.settle > 0 and stop.wait(loop.settle):
                return
    finally:
        loop.close()
