"""The job change log's trigger functions look jobs and bindings up by key, whatever the statistics.

Their joins from the changed rows into ``jobs`` and ``resource_bindings`` are by primary key, over
a handful of rows per statement. A table that grew from empty since its last ANALYZE (a new
database, the first minute of a burst: autovacuum looks once a minute) has no statistics, and
the planner then scanned the whole table for each statement's few rows: 5 to 7 ms per small UPDATE
at 20,000 jobs instead of under 1 ms. With sequential scans off inside these functions the
lookups use the keys always; the transition tables are not scanned through an index either way.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

FUNCTIONS = ("log_binding_inserts", "log_binding_updates", "log_job_updates", "log_job_delete")


def upgrade() -> None:
    for name in FUNCTIONS:
        op.execute(f"ALTER FUNCTION {name}() SET enable_seqscan = off")


def downgrade() -> None:
    for name in FUNCTIONS:
        op.execute(f"ALTER FUNCTION {name}() RESET enable_seqscan")
