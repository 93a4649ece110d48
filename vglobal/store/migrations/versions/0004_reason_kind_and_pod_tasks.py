"""A binding's wait reason keeps its kind; a job's reported pods name their task.

``reason_kind`` holds the WaitKind of ``reason`` (empty when the reason is no wait, or was written
before this revision): the dispatcher compares kinds, not texts, and the API shows it.

Each entry of ``jobs.placements`` gains ``task``, which agents now report with every pod. The
entries stored before are given theirs from the pod's name (``<job>-<task>-<index>``), once,
here; downgrading removes the key again.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("resource_bindings", sa.Column("reason_kind", sa.Text(), nullable=False, server_default=""))
    op.execute(
        """
        UPDATE jobs j SET placements = (
            SELECT jsonb_agg(
                p.value || jsonb_build_object('task', regexp_replace(
                    CASE WHEN starts_with(p.value->>'pod', j.name || '-')
                         THEN substr(p.value->>'pod', length(j.name) + 2)
                         ELSE p.value->>'pod' END,
                    '-[^-]*$', '')) ORDER BY p.ordinality)
            FROM jsonb_array_elements(j.placements) WITH ORDINALITY AS p(value, ordinality))
        WHERE jsonb_array_length(j.placements) > 0
        """
    )


def downgrade() -> None:
    op.execute(
        """
        UPDATE jobs j SET placements = (
            SELECT jsonb_agg(p.value - 'task' ORDER BY p.ordinality)
            FROM jsonb_array_elements(j.placements) WITH ORDINALITY AS p(value, ordinality))
        WHERE jsonb_array_length(j.placements) > 0
        """
    )
    op.drop_column("resource_bindings", "reason_kind")
