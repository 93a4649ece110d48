"""Leader election: a session-level advisory lock (``HUB_LEADER``) held on one dedicated connection.
Every leader loop asks ``check()`` itself before each tick (see loop_runner.py)."""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa

from vglobal.hub import metrics
from vglobal.store.locks import AdvisoryLock, holds_lock, try_session_lock

log = logging.getLogger(__name__)


class Leader:
    """``check()`` answers whether this replica leads now, taking the lock if it is free.

    The lock lives as long as the connection: if Postgres restarts or the connection breaks, the
    next check sees it gone and this replica stops leading until it wins the lock again.
    """

    def __init__(self, engine: sa.Engine, lock: AdvisoryLock = AdvisoryLock.HUB_LEADER) -> None:
        self.engine = engine
        self.lock = lock
        self._conn: sa.Connection | None = None
        self._leading = False
        self._mutex = threading.Lock()

    def check(self) -> bool:
        with self._mutex:
            try:
                if self._conn is None:
                    self._conn = self.engine.connect()
                if self._leading:
                    self._leading = holds_lock(self._conn, self.lock)
                    if not self._leading:
                        log.warning("lost the leader lock")
                else:
                    self._leading = try_session_lock(self._conn, self.lock)
                    if self._leading:
                        log.info("this hub is now the leader")
                self._conn.commit()
            except sa.exc.SQLAlchemyError as exc:
                if self._leading:
                    log.warning("lost the leader lock: %s", exc)
                self._leading = False
                self._drop()
            metrics.LEADER.set(1 if self._leading else 0)
            return self._leading

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()
                self._conn.close()
            except sa.exc.SQLAlchemyError:
                pass
        self._conn = None

    def release(self) -> None:
        with self._mutex:
            self._leading = False
            self._drop()
            metrics.LEADER.set(0)
