"""What the dashboard's queries need: who submitted a job, each job's dispatches, each queue's
share over time, and indexes that keep the first page of a filtered, sorted job list off the
whole table.

``jobs.submitted_by`` is the audit's principal of the Submitted event, stored with the job so
that a filter on it is an index scan (filled in here for the jobs stored before).

``job_dispatches`` holds one row per generation of a binding (deleted with its job by a statement
trigger on jobs). A statement trigger on the
bindings' phase and generation writes it from the transition tables in the changing statement,
so every writer (the dispatcher's batched admissions, failover, drain, rejection, the agents'
reports, cancel) records it in its own transaction with no statement of its own, and no writer
can forget to.

``queue_samples`` holds what the leader samples of each queue once a minute.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_NOW = sa.text("now()")

# How a run ended, from the phase its binding left and the phase it moved to. A re-queue says
# why in the binding's reason_kind (model/reasons.WaitKind).
_OUTCOME = """
    CASE n.phase
        WHEN 'Succeeded' THEN 'Completed'
        WHEN 'Failed' THEN 'Failed'
        WHEN 'Aborted' THEN 'Cancelled'
        ELSE CASE WHEN n.reason_kind IN ('FailedOver', 'Drained', 'Rejected', 'Reclaimed')
                  THEN n.reason_kind ELSE 'Requeued' END
    END
"""
_ADMITTED = "('Dispatched', 'Bound', 'Running')"

_FUNCTION = f"""
CREATE FUNCTION log_dispatches() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH moved AS MATERIALIZED (
        SELECT n.job_uid, n.phase, n.cluster, n.generation, n.reason, n.reason_kind, n.dispatched_at,
               o.phase AS old_phase, o.generation AS old_generation
        FROM new_rows n JOIN old_rows o ON o.job_uid = n.job_uid
        WHERE (n.phase, n.generation) IS DISTINCT FROM (o.phase, o.generation)
    ), ended AS (
        -- A run ends when its binding leaves the admitted phases, or gets a new generation.
        UPDATE job_dispatches d
        SET ended_at = now(), outcome = {_OUTCOME},
            fenced = n.phase NOT IN ('Succeeded', 'Failed'), reason = n.reason
        FROM moved n
        WHERE n.old_phase IN {_ADMITTED}
          AND (n.phase NOT IN {_ADMITTED} OR n.generation <> n.old_generation)
          AND d.job_uid = n.job_uid AND d.generation = n.old_generation AND d.ended_at IS NULL
    )
    INSERT INTO job_dispatches (job_uid, generation, cluster, dispatched_at)
    SELECT n.job_uid, n.generation, n.cluster, coalesce(n.dispatched_at, now())
    FROM moved n WHERE n.generation > n.old_generation AND n.cluster IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$
"""


_FORGET = """
CREATE FUNCTION forget_dispatches() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_dispatches d USING old_rows o WHERE d.job_uid = o.uid;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.add_column("jobs", sa.Column("submitted_by", sa.Text(), nullable=True))
    op.execute(
        "UPDATE jobs j SET submitted_by = e.principal FROM events e "
        "WHERE e.job_uid = j.uid AND e.reason = 'Submitted' AND e.principal IS NOT NULL"
    )
    # Keyset pages of the job list in each sort order, alone and after the queue filter; none of
    # these columns changes after submit, so the jobs' updates stay HOT.
    op.create_index("ix_jobs_created_at", "jobs", ["created_at", "uid"])
    op.create_index("ix_jobs_queue_created_at", "jobs", ["queue", "created_at", "uid"])
    op.create_index("ix_jobs_queue_namespace_name", "jobs", ["queue", "namespace", "name"])
    op.create_index("ix_jobs_name", "jobs", ["name", "uid"])
    op.drop_index("ix_jobs_queue", table_name="jobs")
    op.create_index("ix_jobs_queue", "jobs", ["queue", "uid"])
    # Phase changes: these two are the only ones a job's update writes (sorting by phase, and
    # counts by queue, phase and namespace read from the index alone, which holds the uid a
    # count joined with the bindings needs too).
    op.create_index("ix_jobs_phase", "jobs", ["phase", "uid"])
    op.create_index(
        "ix_jobs_queue_phase", "jobs", ["queue", "phase", "uid"], postgresql_include=["namespace"]
    )
    op.create_index(
        "ix_jobs_submitted_by",
        "jobs",
        ["submitted_by", "created_at", "uid"],
        postgresql_where=sa.text("submitted_by IS NOT NULL"),
    )
    # Substring search on names: a trigram index (pg_trgm is a trusted extension).
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute("CREATE INDEX ix_jobs_name_trgm ON jobs USING gin (name gin_trgm_ops)")

    # Sorting by cluster (jobs on none first); the cluster is written with the phase, which
    # is indexed already, so no HOT update is lost.
    op.execute(
        "CREATE INDEX ix_resource_bindings_cluster_sort "
        "ON resource_bindings ((coalesce(cluster, '')), job_uid)"
    )

    op.create_table(
        "job_dispatches",
        sa.Column("job_uid", sa.Text(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("cluster", sa.Text(), nullable=False),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.Text(), server_default="", nullable=False),
        sa.Column("fenced", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.PrimaryKeyConstraint("job_uid", "generation", name=op.f("pk_job_dispatches")),
    )
    # The runs of every binding as it stands now, and earlier ones from their Dispatched events.
    op.execute(
        "INSERT INTO job_dispatches (job_uid, generation, cluster, dispatched_at, ended_at, outcome, "
        "fenced, reason) "
        "SELECT b.job_uid, b.generation, b.cluster, coalesce(b.dispatched_at, b.updated_at), "
        "CASE WHEN b.phase IN ('Succeeded', 'Failed', 'Aborted') THEN b.finished_at END, "
        "CASE b.phase WHEN 'Succeeded' THEN 'Completed' WHEN 'Failed' THEN 'Failed' "
        "  WHEN 'Aborted' THEN 'Cancelled' ELSE '' END, b.phase = 'Aborted', "
        "CASE WHEN b.phase IN ('Succeeded', 'Failed', 'Aborted') THEN b.reason ELSE '' END "
        "FROM resource_bindings b WHERE b.generation > 0 AND b.cluster IS NOT NULL "
        f"AND b.phase IN {_ADMITTED[:-1]}, 'Succeeded', 'Failed', 'Aborted')"
    )
    op.execute(
        "INSERT INTO job_dispatches (job_uid, generation, cluster, dispatched_at, outcome, fenced) "
        "SELECT DISTINCT ON (e.job_uid, g.gen) e.job_uid, g.gen, e.cluster, e.time, 'Unknown', false "
        "FROM events e, LATERAL (SELECT CAST(substring(e.message FROM '\\(generation (\\d+)\\)') AS bigint)) "
        "AS g(gen) "
        "WHERE e.reason = 'Dispatched' AND e.job_uid IS NOT NULL AND e.cluster IS NOT NULL "
        "AND g.gen IS NOT NULL ORDER BY e.job_uid, g.gen, e.id "
        "ON CONFLICT DO NOTHING"
    )
    op.execute(_FUNCTION)
    # Not 0008's enable_seqscan = off: with it the planner hashed the whole history table through
    # its index for each re-queue instead of looking the moved rows up by key.
    # The history goes with its job. Not a foreign key: its check would cost a lookup per row the
    # dispatcher's admissions insert; one statement per deleting statement instead.
    op.execute(_FORGET)
    op.execute(
        "CREATE TRIGGER job_dispatches_forget AFTER DELETE ON jobs "
        "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION forget_dispatches()"
    )
    op.execute(
        "CREATE TRIGGER binding_dispatches_log AFTER UPDATE ON resource_bindings "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION log_dispatches()"
    )

    op.create_table(
        "queue_samples",
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("allocated", JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("deserved", JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("capability", JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("guarantee", JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("pending", sa.Integer(), server_default="0", nullable=False),
        sa.Column("running", sa.Integer(), server_default="0", nullable=False),
        sa.Column("share", sa.Float(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("queue", "time", name=op.f("pk_queue_samples")),
    )
    op.create_index("ix_queue_samples_time", "queue_samples", ["time"])


def downgrade() -> None:
    op.drop_table("queue_samples")
    op.execute("DROP TRIGGER IF EXISTS job_dispatches_forget ON jobs")
    op.execute("DROP FUNCTION IF EXISTS forget_dispatches()")
    op.execute("DROP TRIGGER IF EXISTS binding_dispatches_log ON resource_bindings")
    op.execute("DROP FUNCTION IF EXISTS log_dispatches()")
    op.drop_table("job_dispatches")
    op.execute("DROP INDEX IF EXISTS ix_resource_bindings_cluster_sort")
    op.execute("DROP INDEX IF EXISTS ix_jobs_name_trgm")
    for name in (
        "ix_jobs_queue_phase",
        "ix_jobs_phase",
        "ix_jobs_queue",
        "ix_jobs_submitted_by",
        "ix_jobs_name",
        "ix_jobs_queue_namespace_name",
        "ix_jobs_queue_created_at",
        "ix_jobs_created_at",
    ):
        op.drop_index(name, table_name="jobs")
    op.create_index("ix_jobs_queue", "jobs", ["queue"])
    op.drop_column("jobs", "submitted_by")
