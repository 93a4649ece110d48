"""Predicted starts of waiting jobs: the leader's replay of admission on the live state.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_estimates",
        sa.Column("job_uid", sa.Text, sa.ForeignKey("jobs.uid", ondelete="CASCADE"), primary_key=True),
        sa.Column("start", sa.Float, nullable=True),
        sa.Column("cluster", sa.Text, nullable=False, server_default=""),
        sa.Column("ahead", sa.Integer, nullable=False, server_default="0"),
        sa.Column("computed_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_estimates")
