"""Every Postgres advisory lock key the project uses, in one place."""

from __future__ import annotations

import enum

import sqlalchemy as sa


class AdvisoryLock(enum.IntEnum):
    MIGRATIONS = 0x76670001
    # Held by the one replica that runs the leader loops (dispatcher, failover, cron, JobFlows, the
    # change log, retention); the key is unchanged since it guarded the dispatcher alone, so hubs
    # of either version exclude each other.
    HUB_LEADER = 0x76670002
    # Taken per transaction by a dispatch cycle, so two hubs that both think they lead never overlap.
    DISPATCH_CYCLE = 0x76670003


def try_session_lock(conn: sa.Connection, lock: AdvisoryLock) -> bool:
    """Take a session-level lock on ``conn``; held until released or the connection closes."""
    return bool(conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": int(lock)}).scalar())


def hold_session_lock(conn: sa.Connection, lock: AdvisoryLock) -> None:
    conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": int(lock)})


def release_session_lock(conn: sa.Connection, lock: AdvisoryLock) -> None:
    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": int(lock)})


def holds_lock(conn: sa.Connection, lock: AdvisoryLock) -> bool:
    """Whether this connection's backend still holds ``lock`` (false once the session was lost)."""
    held = conn.execute(
        sa.text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND pid = pg_backend_pid() AND ((classid::bigint << 32) | objid::bigint) = :k"
        ),
        {"k": int(lock)},
    ).scalar()
    return bool(held)


def try_xact_lock(conn: sa.Connection, lock: AdvisoryLock) -> bool:
    """Take a transaction-level lock; released at commit or rollback."""
    return bool(conn.execute(sa.text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": int(lock)}).scalar())
