"""Nominated nodes: the nodes admission packed a preemptor's or reclaimer's gang onto, in the room
its victims free, kept on its binding so its Dispatch tells the agent (Volcano's nominatedNodeName).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("resource_bindings", sa.Column("nominated", JSONB, nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("resource_bindings", "nominated")
