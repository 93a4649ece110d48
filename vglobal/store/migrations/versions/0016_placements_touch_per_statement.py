"""Reported placements touch their bindings once per statement, not once per row.

0002 touched a job's binding from a row trigger: one ``UPDATE resource_bindings`` per job row, and
each of those fires the bindings' statement triggers (change log, job counts, dispatch history)
for its one row. A report batch of 500 jobs ran 500 such statements: in ``bench/limit.py
--statements`` they were most of Postgres's time per job. One statement trigger with transition
tables now touches every binding whose job's placements changed, in one UPDATE.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_FUNCTION = """
CREATE FUNCTION touch_bindings_on_placements() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE resource_bindings AS b SET updated_at = now()
    FROM new_rows AS n JOIN old_rows AS o ON o.uid = n.uid
    WHERE b.job_uid = n.uid AND o.placements IS DISTINCT FROM n.placements;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS placements_touch_binding ON jobs")
    op.execute("DROP FUNCTION IF EXISTS touch_binding_on_placements()")
    op.execute(_FUNCTION)
    # As the change log's functions (0008): bindings are looked up by key even before ANALYZE.
    op.execute("ALTER FUNCTION touch_bindings_on_placements() SET enable_seqscan = off")
    # A trigger with transition tables cannot name columns (UPDATE OF placements): the function
    # picks the rows whose placements changed.
    op.execute(
        "CREATE TRIGGER placements_touch_bindings AFTER UPDATE ON jobs "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION touch_bindings_on_placements()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS placements_touch_bindings ON jobs")
    op.execute("DROP FUNCTION IF EXISTS touch_bindings_on_placements()")
    op.execute(
        """
        CREATE FUNCTION touch_binding_on_placements() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE resource_bindings SET updated_at = now() WHERE job_uid = NEW.uid;
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER placements_touch_binding AFTER UPDATE OF placements ON jobs FOR EACH ROW "
        "WHEN (OLD.placements IS DISTINCT FROM NEW.placements) "
        "EXECUTE FUNCTION touch_binding_on_placements()"
    )
