"""Indexes that keep the dispatcher's reads and the removal of old jobs away from finished history.

Every cycle the dispatcher looks for the bindings written since its last read: among the
unfinished ones (a partial index holds only those) and among those finished since then (by finish
time). Finished bindings are most of the table after a while and no longer read. The retention
loop finds the jobs finished longer ago than --finished-job-ttl by the same finish-time index.
Neither index holds a column that a binding's other writes change, so those stay HOT updates
(see 0003).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UNFINISHED = "phase IN ('Suspended', 'Dispatched', 'Bound', 'Running')"
FINISHED = "phase IN ('Succeeded', 'Failed', 'Aborted')"


def upgrade() -> None:
    op.execute(
        f"CREATE INDEX ix_resource_bindings_unfinished ON resource_bindings (job_uid) WHERE {UNFINISHED}"
    )
    op.execute(
        f"CREATE INDEX ix_resource_bindings_finished_at ON resource_bindings (finished_at) WHERE {FINISHED}"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_resource_bindings_finished_at")
    op.execute("DROP INDEX IF EXISTS ix_resource_bindings_unfinished")
