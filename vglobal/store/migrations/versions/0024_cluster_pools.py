"""Node pools a cluster can grow on demand, as its agent reports them.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("clusters", sa.Column("pools", JSONB, nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("clusters", "pools")
