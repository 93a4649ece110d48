"""kubectl's apply on jobs: ``spec_generation`` (metadata.generation, bumped by each change of what was
applied), ``observed_generation`` (status.observedGeneration: the generation the job's cluster last
said it runs) and ``managed_fields`` (per field path, the manager that last set it: server-side
apply's conflicts).

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("spec_generation", sa.BigInteger, nullable=False, server_default="1"))
    op.add_column("jobs", sa.Column("observed_generation", sa.BigInteger, nullable=False, server_default="0"))
    op.add_column("jobs", sa.Column("managed_fields", JSONB, nullable=False, server_default="{}"))
    # The jobs applied anew whose cluster has not said it carries them out: what every agent
    # stream looks for each second, kept small (a job never applied over has generation 1).
    op.create_index(
        "ix_jobs_respecified",
        "jobs",
        ["uid"],
        postgresql_where=sa.text("spec_generation > 1 AND spec_generation > observed_generation"),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_respecified", table_name="jobs")
    op.drop_column("jobs", "managed_fields")
    op.drop_column("jobs", "observed_generation")
    op.drop_column("jobs", "spec_generation")
