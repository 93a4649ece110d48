"""Alembic environment: runs on the connection handed in by ``vglobal.store.migrate``."""

from __future__ import annotations

from alembic import context

from vglobal.store.tables import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through vglobal.store.migrate, which passes a connection")

context.configure(connection=connection, target_metadata=metadata, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
