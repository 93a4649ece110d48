"""CronJobs, JobTemplates and JobFlows; who made a job; a log of job changes for watching.

- ``cron_jobs``, ``job_templates``, ``job_flows``: the workflow kinds the leader's loops drive.
- ``jobs.owner_uid``: the CronJob or JobFlow that made a job; ``events.owner_uid``: their events.
- ``jobs.labels``: metadata.labels, copied out of the manifest so a change's log entry need not
  read the manifest (filled here for the jobs stored before).
- ``job_changes``: triggers on ``jobs`` and ``resource_bindings`` log every change of a job in the
  changing transaction, with the job as the change left it. A change gets its revision only after
  it commits (``job_watch`` holds the last one given out), so revisions follow commit order.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_JSONB = postgresql.JSONB(astext_type=sa.Text())
_NOW = sa.text("now()")

# The job as a watcher sees it: everything of the API's Job but the manifest and the pods.
_STATE_FUNCTION = """
CREATE FUNCTION job_watch_state(j jobs, b resource_bindings) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'phase', j.phase, 'bindingPhase', b.phase, 'cluster', b.cluster, 'generation', b.generation,
        'reason', b.reason, 'reasonKind', b.reason_kind, 'attempts', b.attempts,
        'retryCount', j.retry_count, 'tasks', j.tasks, 'priority', j.priority,
        'priorityClassName', j.priority_class_name, 'minAvailable', j.min_available,
        'request', j.request, 'requestId', j.request_id,
        'createdAt', extract(epoch FROM j.created_at),
        'updatedAt', extract(epoch FROM greatest(j.updated_at, b.updated_at)))
$$
"""
_XID = "CAST(CAST(pg_current_xact_id() AS text) AS bigint)"
_COLUMNS = "(xid, kind, job_uid, namespace, name, queue, labels, state)"
# One statement-level trigger per kind of write: one INSERT for all the rows a statement changed.
_FUNCTIONS = {
    "log_binding_inserts": f"""
        INSERT INTO job_changes {_COLUMNS}
        SELECT {_XID}, 'ADDED', j.uid, j.namespace, j.name, j.queue, j.labels, job_watch_state(j, n)
        FROM new_rows n JOIN jobs j ON j.uid = n.job_uid;
    """,
    # Only what a watcher sees: a binding touched for the dispatcher's sake is no change.
    "log_binding_updates": f"""
        INSERT INTO job_changes {_COLUMNS}
        SELECT {_XID}, 'MODIFIED', j.uid, j.namespace, j.name, j.queue, j.labels, job_watch_state(j, n)
        FROM new_rows n JOIN old_rows o ON o.job_uid = n.job_uid JOIN jobs j ON j.uid = n.job_uid
        WHERE (n.phase, n.cluster, n.generation, n.reason, n.reason_kind, n.attempts)
              IS DISTINCT FROM (o.phase, o.cluster, o.generation, o.reason, o.reason_kind, o.attempts);
    """,
    "log_job_updates": f"""
        INSERT INTO job_changes {_COLUMNS}
        SELECT {_XID}, 'MODIFIED', n.uid, n.namespace, n.name, n.queue, n.labels, job_watch_state(n, b)
        FROM new_rows n JOIN old_rows o ON o.uid = n.uid JOIN resource_bindings b ON b.job_uid = n.uid
        WHERE (n.phase, n.tasks, n.retry_count) IS DISTINCT FROM (o.phase, o.tasks, o.retry_count);
    """,
}
_TRIGGERS = [
    ("binding_inserts_log", "INSERT", "resource_bindings", "NEW TABLE AS new_rows", "log_binding_inserts"),
    (
        "binding_updates_log",
        "UPDATE",
        "resource_bindings",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "log_binding_updates",
    ),
    ("job_updates_log", "UPDATE", "jobs", "OLD TABLE AS old_rows NEW TABLE AS new_rows", "log_job_updates"),
]
# A deleted job's binding goes with it (ON DELETE CASCADE), so its last state is read before,
# locked: a writer of the binding that commits meanwhile is waited for and its change seen.
_DELETE_FUNCTION = f"""
CREATE FUNCTION log_job_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    b resource_bindings;
BEGIN
    SELECT * INTO b FROM resource_bindings WHERE job_uid = OLD.uid FOR UPDATE;
    INSERT INTO job_changes {_COLUMNS}
    VALUES ({_XID}, 'DELETED', OLD.uid, OLD.namespace, OLD.name, OLD.queue, OLD.labels,
            job_watch_state(OLD, b));
    PERFORM pg_notify('vglobal_job_changes', '');
    RETURN OLD;
END
$$
"""


def _tables() -> None:
    op.create_table(
        "cron_jobs",
        sa.Column("uid", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("manifest", _JSONB, nullable=False),
        sa.Column("status", _JSONB, server_default="{}", nullable=False),
        sa.Column("next_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_cron_jobs")),
        sa.UniqueConstraint("namespace", "name", name="uq_cron_jobs_namespace_name"),
    )
    op.create_table(
        "job_templates",
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("manifest", _JSONB, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("namespace", "name", name=op.f("pk_job_templates")),
    )
    op.create_table(
        "job_flows",
        sa.Column("uid", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("manifest", _JSONB, nullable=False),
        sa.Column("templates", _JSONB, nullable=False),
        sa.Column("phase", sa.Text(), server_default="Pending", nullable=False),
        sa.Column("status", _JSONB, server_default="{}", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_job_flows")),
        sa.UniqueConstraint("namespace", "name", name="uq_job_flows_namespace_name"),
    )
    op.create_table(
        "job_changes",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("xid", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("job_uid", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("labels", _JSONB, nullable=False),
        sa.Column("state", _JSONB, nullable=False),
        sa.Column("time", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_changes")),
    )
    op.create_index("ix_job_changes_revision", "job_changes", ["revision"], unique=True)
    op.create_index(
        "ix_job_changes_unsequenced", "job_changes", ["id"], postgresql_where=sa.text("revision IS NULL")
    )
    op.create_table(
        "job_watch",
        sa.Column("id", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("last_revision", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("pruned_through", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_watch")),
    )
    op.execute("INSERT INTO job_watch (id) VALUES (1)")


def upgrade() -> None:
    op.add_column("jobs", sa.Column("labels", _JSONB, server_default="{}", nullable=False))
    op.add_column("jobs", sa.Column("owner_uid", sa.Text(), nullable=True))
    op.create_index("ix_jobs_owner_uid", "jobs", ["owner_uid"])
    op.execute(
        "UPDATE jobs SET labels = manifest->'metadata'->'labels' "
        "WHERE jsonb_typeof(manifest->'metadata'->'labels') = 'object'"
    )
    op.add_column("events", sa.Column("owner_uid", sa.Text(), nullable=True))
    op.create_index("ix_events_owner_uid", "events", ["owner_uid"])
    _tables()
    op.execute(_STATE_FUNCTION)
    for name, body in _FUNCTIONS.items():
        op.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} "
            "IF FOUND THEN PERFORM pg_notify('vglobal_job_changes', ''); END IF; RETURN NULL; END $$"
        )
    for trigger, event, table, refs, function in _TRIGGERS:
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER {event} ON {table} REFERENCING {refs} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        )
    op.execute(_DELETE_FUNCTION)
    op.execute(
        "CREATE TRIGGER job_delete_log BEFORE DELETE ON jobs FOR EACH ROW EXECUTE FUNCTION log_job_delete()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS job_delete_log ON jobs")
    op.execute("DROP FUNCTION IF EXISTS log_job_delete()")
    for trigger, _, table, _, function in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS {function}()")
    op.execute("DROP FUNCTION IF EXISTS job_watch_state(jobs, resource_bindings)")
    for table in ("job_watch", "job_changes", "job_flows", "job_templates", "cron_jobs"):
        op.drop_table(table)
    op.drop_index("ix_events_owner_uid", table_name="events")
    op.drop_column("events", "owner_uid")
    op.drop_index("ix_jobs_owner_uid", table_name="jobs")
    op.drop_column("jobs", "owner_uid")
    op.drop_column("jobs", "labels")
