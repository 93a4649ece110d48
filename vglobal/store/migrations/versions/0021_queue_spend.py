"""GPU-seconds each queue's jobs held per day: what a queue's GPU-hour budget is charged against.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "queue_spend",
        sa.Column("queue", sa.Text, primary_key=True),
        sa.Column("day", sa.Integer, primary_key=True),
        sa.Column("gpu_seconds", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("queue_spend")
