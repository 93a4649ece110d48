"""HyperJobs: an index of the jobs that are a HyperJob's children, by its name, so its status,
cancel and delete, and the hub's handling of a failed child find them without a scan of all jobs.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_NAME = "(labels ->> 'volcano.sh/hyperjob-name')"


def upgrade() -> None:
    op.create_index(
        "ix_jobs_hyperjob",
        "jobs",
        [sa.text(_NAME), "namespace"],
        postgresql_where=sa.text(f"{_NAME} IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_hyperjob", table_name="jobs")
