"""Claims on room freed by victims, kept between dispatch cycles (and across a leader change): while
one stands, nobody but the job the victims were taken for is admitted into that room.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "admission_claims",
        sa.Column("for_uid", sa.Text, primary_key=True),
        sa.Column("claim", JSONB, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("admission_claims")
