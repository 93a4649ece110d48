"""Node cards: per node of a cluster, its GPU cards as the agent reports them free, so admission
checks a gang's vGPUs against cards and not only node totals.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("clusters", sa.Column("devices", JSONB, nullable=False, server_default="{}"))


def downgrade() -> None:
    op.drop_column("clusters", "devices")
