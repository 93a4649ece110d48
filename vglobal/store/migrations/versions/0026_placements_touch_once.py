"""Reported placements touch a binding only where this transaction has not already stamped it.

An agent's report batch moves the bindings it names (``updated_at = now()``) and writes their jobs'
placements, whose statement trigger (0016) stamped each of those bindings again: a second row
version of the binding, and its statement triggers (change log, job counts, dispatch history) run
over it, for no change (now() is the transaction's start, so the stamp it would write is the one
already there). The touch now skips a binding that already carries now().

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def _function(skip_stamped: bool) -> str:
    stamped = " AND b.updated_at IS DISTINCT FROM now()" if skip_stamped else ""
    # A replaced function loses its settings unless named again: 0016's enable_seqscan kept.
    return f"""
CREATE OR REPLACE FUNCTION touch_bindings_on_placements() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off AS $$
BEGIN
    UPDATE resource_bindings AS b SET updated_at = now()
    FROM new_rows AS n JOIN old_rows AS o ON o.uid = n.uid
    WHERE b.job_uid = n.uid AND o.placements IS DISTINCT FROM n.placements{stamped};
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.execute(_function(skip_stamped=True))


def downgrade() -> None:
    op.execute(_function(skip_stamped=False))
