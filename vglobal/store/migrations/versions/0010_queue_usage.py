"""Fair share over time: every queue's decayed usage, so a new leader continues it.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "queue_usage",
        sa.Column("queue", sa.Text, nullable=False),
        sa.Column("usage", JSONB, nullable=False),
        sa.Column("rolled", JSONB, nullable=False),
        sa.Column("share", sa.Float, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("queue", name="pk_queue_usage"),
    )


def downgrade() -> None:
    op.drop_table("queue_usage")
