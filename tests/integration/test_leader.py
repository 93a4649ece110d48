"""Leadership: one holder at a time, and a lost lock is noticed at the next check."""

from __future__ import annotations

import sqlalchemy as sa

from vglobal.hub.leader import Leader


def test_one_leader_and_takeover_when_its_session_dies(engine: sa.Engine, database_url: str) -> None:
    from vglobal.store.engine import make_engine

    other_engine = make_engine(database_url, pool_size=1)
    a, b = Leader(engine), Leader(other_engine)
    try:
        assert a.check() is True
        assert b.check() is False
        assert a.check() is True  # still held
        # Postgres drops a's session (a crash, a failover, an admin): a must stop leading at once.
        with engine.connect() as conn:
            pids = (
                conn.execute(
                    sa.text(
                        # This test's database only: other tests share the server.
                        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                        "AND pid <> pg_backend_pid() "
                        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                )
                .scalars()
                .all()
            )
            for pid in pids:
                conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            conn.commit()
        assert a.check() is False
        assert b.check() is True
    finally:
        a.release()
        b.release()
        other_engine.dispose()
