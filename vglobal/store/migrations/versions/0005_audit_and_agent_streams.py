"""Who did it, and which stream speaks for a cluster.

``events.principal`` names who made the call an event records (a user, or ``cluster:<name>`` for
an agent's certificate); ``events.subject`` names what a job-less event is about (``queue team-a``,
``job default/train`` once the job is deleted, so its deletion stays on record).

``clusters.stream`` is the id of the agent stream that speaks for the cluster (NULL when none is
open), ``clusters.stream_identity`` who opened it: only that stream's reports and node lists are
recorded, and another stream may take the cluster over only once this one has missed heartbeats.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("principal", sa.Text(), nullable=True))
    op.add_column("events", sa.Column("subject", sa.Text(), nullable=True))
    op.create_index(
        "ix_events_subject", "events", ["subject"], postgresql_where=sa.text("subject IS NOT NULL")
    )
    op.add_column("clusters", sa.Column("stream", sa.Text(), nullable=True))
    op.add_column("clusters", sa.Column("stream_identity", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("clusters", "stream_identity")
    op.drop_column("clusters", "stream")
    op.drop_index("ix_events_subject", table_name="events")
    op.drop_column("events", "subject")
    op.drop_column("events", "principal")
