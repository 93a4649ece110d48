"""A job's dependencies held by the hub: v1 ConfigMaps and Secrets (a Secret's values encrypted),
each write numbered by a sequence so agent streams find what changed.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE dependency_revisions")
    op.create_table(
        "dependency_objects",
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("type", sa.Text, nullable=False, server_default=""),
        sa.Column("immutable", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("labels", JSONB, nullable=False, server_default="{}"),
        sa.Column("annotations", JSONB, nullable=False, server_default="{}"),
        sa.Column("sizes", JSONB, nullable=False, server_default="{}"),
        sa.Column("text_keys", JSONB, nullable=False, server_default="[]"),
        sa.Column("data", JSONB, nullable=True),
        sa.Column("sealed", sa.LargeBinary, nullable=True),
        sa.Column(
            "revision",
            sa.BigInteger,
            nullable=False,
            server_default=sa.text("nextval('dependency_revisions')"),
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.PrimaryKeyConstraint("namespace", "kind", "name", name="pk_dependency_objects"),
    )
    op.create_index("ix_dependency_objects_revision", "dependency_objects", ["revision"])


def downgrade() -> None:
    op.drop_table("dependency_objects")
    op.execute("DROP SEQUENCE dependency_revisions")
