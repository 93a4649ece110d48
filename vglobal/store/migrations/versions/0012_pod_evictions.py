"""Pod evictions: the pods of a run its agent is to evict (preemption at pod granularity), kept on
the binding until the run ends or moves, so a new agent stream is told again.

Revision ID: 0012
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("resource_bindings", sa.Column("evictions", JSONB, nullable=False, server_default="[]"))
    op.create_index(
        "ix_resource_bindings_evictions",
        "resource_bindings",
        ["cluster"],
        postgresql_where=sa.text("evictions <> '[]'::jsonb"),
    )


def downgrade() -> None:
    op.drop_index("ix_resource_bindings_evictions", table_name="resource_bindings")
    op.drop_column("resource_bindings", "evictions")
