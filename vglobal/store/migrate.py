"""Schema migrations, run at hub start under the migrations advisory lock."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from vglobal.store.locks import AdvisoryLock, hold_session_lock, release_session_lock

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: sa.Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    return cfg


def heads() -> list[str]:
    return list(ScriptDirectory.from_config(alembic_config()).get_heads())


def _run(engine: sa.Engine, action: str, revision: str) -> None:
    with engine.connect() as conn:
        # Replicas starting together migrate one at a time; the others then find nothing to do.
        hold_session_lock(conn, AdvisoryLock.MIGRATIONS)
        conn.commit()
        try:
            cfg = alembic_config(conn)
            if action == "upgrade":
                command.upgrade(cfg, revision)
            else:
                command.downgrade(cfg, revision)
            conn.commit()
        finally:
            release_session_lock(conn, AdvisoryLock.MIGRATIONS)
            conn.commit()


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    _run(engine, "upgrade", revision)


def downgrade(engine: sa.Engine, revision: str) -> None:
    _run(engine, "downgrade", revision)


def current_revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        exists = conn.execute(sa.text("SELECT to_regclass('alembic_version')")).scalar()
        if exists is None:
            return None
        return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
