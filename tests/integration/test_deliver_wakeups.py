"""A dispatch cycle that only admitted wakes the agent streams of the clusters it admitted to: its
DELIVER notification names them, and every hub's listener hands the names to the streams."""

from __future__ import annotations

import queue
import threading
import time

import sqlalchemy as sa

from vglobal.hub.notify import DELIVER, Wakeups, deliver_to, delivered_to, listen_forever, notify
from vglobal.hub.server import libpq_dsn
from vglobal.store.engine import make_sessionmaker, session_scope


def test_a_deliver_notification_carries_the_clusters_to_every_listener(
    engine: sa.Engine, database_url: str
) -> None:
    wakeups = Wakeups([DELIVER])
    got: queue.Queue[frozenset[str] | None] = queue.Queue()
    wakeups.subscribe(DELIVER, lambda payload: got.put(delivered_to(payload)))
    stop = threading.Event()
    listener = threading.Thread(target=listen_forever, args=(libpq_dsn(database_url), wakeups, stop))
    listener.start()
    try:
        sessions = make_sessionmaker(engine)
        # Sent until heard: a notification sent before the listener's LISTEN is not for it.
        first, deadline = None, time.monotonic() + 60
        while first is None:
            assert time.monotonic() < deadline, "the listener heard no notification"
            with session_scope(sessions) as session:
                notify(DELIVER, session=session, payload=deliver_to(["east", "west", "east"]))
            try:
                first = got.get(timeout=0.5)
            except queue.Empty:
                continue
        assert first == {"east", "west"}
        with session_scope(sessions) as session:
            notify(DELIVER, session=session)  # a cancel, a re-queue: every stream checks
        heard = got.get(timeout=30)
        while heard is not None:  # the rest of the repeats, then the one for every stream
            assert heard == {"east", "west"}
            heard = got.get(timeout=30)
    finally:
        stop.set()
        listener.join()


def test_too_many_clusters_for_one_notification_wake_every_stream() -> None:
    names = [f"cluster-{k:04d}" for k in range(1000)]
    assert deliver_to(names) == ""
    assert delivered_to(deliver_to(names[:3])) == set(names[:3])
