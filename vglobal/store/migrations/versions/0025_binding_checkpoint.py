"""When a binding's current run last saved its work, as its agent or its owner reported it.

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    column = sa.Column("checkpointed_at", sa.DateTime(timezone=True), nullable=True)
    op.add_column("resource_bindings", column)


def downgrade() -> None:
    op.drop_column("resource_bindings", "checkpointed_at")
