"""Room on each page of resource_bindings for the row's next version.

A binding is rewritten many times while it waits and runs (its wait reason, its phase), and none
of those writes changes an indexed column: with free room on the row's page, Postgres keeps the
new version there and leaves the indexes alone (a HOT update). Full pages, the default, make
every such write also insert into both indexes. Pages written from now on keep a quarter free.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE resource_bindings SET (fillfactor = 75)")


def downgrade() -> None:
    op.execute("ALTER TABLE resource_bindings RESET (fillfactor)")
