"""A job's reported placements mark its binding as written.

The dispatcher finds what changed since its last read by the row versions of resource_bindings.
Of a job's own row only the reported placements matter to it, so a change of them also touches
the binding: the job table, which keeps every finished job, need not be scanned each cycle.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
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


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS placements_touch_binding ON jobs")
    op.execute("DROP FUNCTION IF EXISTS touch_binding_on_placements()")
