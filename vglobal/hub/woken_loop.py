"""The shape of a leader-only loop that runs when notified or when its own timer says so.

The cron, JobFlow and watch-log loops each call ``run_woken`` with their tick; what differs
between them is only the tick.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import sqlalchemy as sa

from vglobal.hub.context import HubContext
from vglobal.hub.leader import Leader

log = logging.getLogger(__name__)

# While this hub does not lead, how often it asks again.
FOLLOWER_RETRY = 1.0


def run_woken(
    ctx: HubContext,
    leader: Leader,
    stop: threading.Event,
    *,
    name: str,
    channels: Sequence[str],
    tick: Callable[[bool], float],
    min_gap: float,
    max_wait: float,
) -> None:
    """Call ``tick(woken)`` while this hub leads: at once, then whenever one of ``channels`` fires
    (``woken`` is True) or the seconds the last tick returned have passed (False).

    Ticks are at least ``min_gap`` apart (a burst of notifications makes one tick) and at most
    ``max_wait``: a notification lost while the listener reconnects only delays. A tick that fails
    is logged and the next one comes after ``min_gap``.
    """
    seen = {c: ctx.wakeups.seq(c) for c in channels}
    woken = True
    while not stop.is_set():
        wait = FOLLOWER_RETRY
        started = time.monotonic()
        if leader.check():
            try:
                wait = min(max(tick(woken), 0.0), max_wait)
            except sa.exc.SQLAlchemyError as exc:
                log.warning("%s tick failed, will retry: %s", name, exc)
                wait = min_gap
            except Exception:
                log.exception("%s tick failed", name)
                wait = min_gap
        gap = min_gap - (time.monotonic() - started)
        if gap > 0 and stop.wait(gap):
            return
        now = ctx.wakeups.wait_any(seen, max(wait - max(gap, 0.0), 0.0))
        woken = now != seen
        seen = now
