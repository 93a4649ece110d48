"""Node pools a cluster can grow on demand, as its agent reports them.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("clusters", sa.Column("pools", JSONB, nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("clusters", "pools")
