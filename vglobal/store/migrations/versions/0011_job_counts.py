"""Job counts kept as they change, so CountJobs, ListQueues and the dashboard's figures do not
count a million rows per call.

``job_counts`` holds signed deltas per key (queue, namespace, job phase, binding phase, cluster,
hour of finish): the count of a key is the sum of its rows. Statement triggers on jobs and on
resource_bindings append one grouped row per key a statement changed, from its transition
tables, so every writer (the dispatcher's batched admissions, the agents' batched reports,
cancel, failover, retention) counts in its own transaction with no statement of its own.
Appending takes no row lock: concurrent writers of the same key do not wait for each other. The
leader folds the rows into one per key every few seconds (``compact_job_counts``).

A job's key joins its row with its binding's. Every writer of a job holds its binding's row lock
(job_actions.delete_job says so), so the two triggers of one job never read each other's
half-written state. A deleted job's binding goes by ON DELETE CASCADE after the job's row, when
neither trigger could join the two any more: a row trigger before the job's delete takes the
key off while both are still there.

A statement that writes both a job and its binding (a data-modifying WITH) would count the
change twice; none does: each writer updates them in statements of their own.

The hour of finish (epoch hours; -1 while unfinished) lets a count of jobs finished since T add
whole hours from here and count only the part of T's hour from the finish-time index.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

COLUMNS = "queue, namespace, phase, binding_phase, cluster, finished_hour"
_FINISHED = "('Succeeded', 'Failed', 'Aborted')"


def _job(j: str) -> str:
    return f"{j}.queue, {j}.namespace, {j}.phase"


def _binding(b: str, prefix: str = "") -> str:
    """A binding's part of the key, from its columns (named ``prefix`` + phase, cluster, finished)."""
    phase, cluster = f"{b}.{prefix}phase", f"{b}.{prefix}cluster"
    finished = f"{b}.{prefix}finished" if prefix else f"{b}.finished_at"
    return (
        f"coalesce({phase}, ''), coalesce({cluster}, ''), "
        f"CASE WHEN {phase} IN {_FINISHED} AND {finished} IS NOT NULL "
        f"THEN floor(extract(epoch FROM {finished}) / 3600)::bigint ELSE -1 END"
    )


_NO_BINDING = "'', '', -1::bigint"


def _append(deltas: str) -> str:
    """One row per key from a union of (key..., d) rows."""
    return (
        f"INSERT INTO job_counts ({COLUMNS}, n) "
        f"SELECT {COLUMNS}, sum(d) FROM ({deltas}) AS x({COLUMNS}, d) "
        f"GROUP BY {COLUMNS} HAVING sum(d) <> 0;"
    )


def _function(name: str, body: str, returns: str = "NULL") -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nRETURN {returns};\nEND\n$$"
    )


REBUILD = (
    "DELETE FROM job_counts; "
    f"INSERT INTO job_counts ({COLUMNS}, n) "
    f"SELECT {_job('j')}, {_binding('b')}, count(*) FROM jobs j "
    f"LEFT JOIN resource_bindings b ON b.job_uid = j.uid GROUP BY 1, 2, 3, 4, 5, 6;"
)

_FUNCTIONS = {
    # A new job has no binding yet, or one inserted by the same statement, whose own trigger
    # moves the job's count to the binding's key either way.
    "job_counts_jobs_added": _append(f"SELECT {_job('n')}, {_NO_BINDING}, 1 FROM new_rows n"),
    "job_counts_jobs_changed": (
        "WITH moved AS MATERIALIZED (SELECT o.queue AS oq, o.namespace AS ons, o.phase AS op, n.* "
        "FROM old_rows o JOIN new_rows n ON n.uid = o.uid "
        "WHERE (o.queue, o.namespace, o.phase) IS DISTINCT FROM (n.queue, n.namespace, n.phase)) "
        + _append(
            f"SELECT m.oq, m.ons, m.op, {_binding('b')}, -1 FROM moved m "
            "LEFT JOIN resource_bindings b ON b.job_uid = m.uid "
            f"UNION ALL SELECT {_job('m')}, {_binding('b')}, 1 FROM moved m "
            "LEFT JOIN resource_bindings b ON b.job_uid = m.uid"
        )
    ),
    "job_counts_bindings_added": _append(
        f"SELECT {_job('j')}, {_NO_BINDING}, -1 FROM new_rows n JOIN jobs j ON j.uid = n.job_uid "
        f"UNION ALL SELECT {_job('j')}, {_binding('n')}, 1 FROM new_rows n JOIN jobs j ON j.uid = n.job_uid"
    ),
    # The job of each moved binding looked up once, both sides of the move from that row.
    "job_counts_bindings_changed": (
        "WITH moved AS MATERIALIZED (SELECT j.queue, j.namespace, j.phase AS job_phase, "
        "o.phase AS ophase, o.cluster AS ocluster, o.finished_at AS ofinished, "
        "n.phase AS nphase, n.cluster AS ncluster, n.finished_at AS nfinished "
        "FROM old_rows o JOIN new_rows n ON n.job_uid = o.job_uid JOIN jobs j ON j.uid = n.job_uid "
        "WHERE (o.phase, o.cluster, o.finished_at) IS DISTINCT FROM (n.phase, n.cluster, n.finished_at)), "
        "was AS (SELECT queue, namespace, job_phase AS phase, ophase, ocluster, ofinished FROM moved), "
        "now AS (SELECT queue, namespace, job_phase AS phase, nphase, ncluster, nfinished FROM moved) "
        + _append(
            f"SELECT {_job('w')}, {_binding('w', 'o')}, -1 FROM was w "
            f"UNION ALL SELECT {_job('m')}, {_binding('m', 'n')}, 1 FROM now m"
        )
    ),
    # A binding deleted with its job finds no job: the job's own trigger counted it off.
    "job_counts_bindings_removed": _append(
        f"SELECT {_job('j')}, {_binding('o')}, -1 FROM old_rows o JOIN jobs j ON j.uid = o.job_uid "
        f"UNION ALL SELECT {_job('j')}, {_NO_BINDING}, 1 FROM old_rows o JOIN jobs j ON j.uid = o.job_uid"
    ),
    "job_counts_rebuild": "PERFORM rebuild_job_counts();",
}

_BY_KEY = (
    "job_counts_jobs_changed",
    "job_counts_bindings_added",
    "job_counts_bindings_changed",
    "job_counts_bindings_removed",
)

_TRIGGERS = [
    ("jobs", "INSERT", "NEW TABLE AS new_rows", "job_counts_jobs_added"),
    ("jobs", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows", "job_counts_jobs_changed"),
    ("resource_bindings", "INSERT", "NEW TABLE AS new_rows", "job_counts_bindings_added"),
    (
        "resource_bindings",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "job_counts_bindings_changed",
    ),
    ("resource_bindings", "DELETE", "OLD TABLE AS old_rows", "job_counts_bindings_removed"),
]

_JOB_REMOVED = _function(
    "job_counts_job_removed",
    f"INSERT INTO job_counts ({COLUMNS}, n) SELECT {_job('OLD')}, {_binding('b')}, -1 "
    "FROM (SELECT 1) AS one LEFT JOIN resource_bindings b ON b.job_uid = OLD.uid;",
    returns="OLD",
)


def upgrade() -> None:
    op.create_table(
        "job_counts",
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text(), nullable=False),
        sa.Column("binding_phase", sa.Text(), nullable=False),
        sa.Column("cluster", sa.Text(), nullable=False),
        sa.Column("finished_hour", sa.BigInteger(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
    )
    # Also what a bulk load with triggers off calls afterwards.
    op.execute(f"CREATE FUNCTION rebuild_job_counts() RETURNS void LANGUAGE sql AS $$ {REBUILD} $$")
    for name, body in _FUNCTIONS.items():
        op.execute(_function(name, body))
    op.execute(_JOB_REMOVED)
    # As the change log's functions (0008): a statement's few rows are looked up by key even in
    # tables that grew since their last ANALYZE, where a plan cached while they were tiny scans.
    for name in (*_BY_KEY, "job_counts_job_removed"):
        op.execute(f"ALTER FUNCTION {name}() SET enable_seqscan = off")
    for table, event, refs, fn in _TRIGGERS:
        op.execute(
            f"CREATE TRIGGER {fn} AFTER {event} ON {table} REFERENCING {refs} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {fn}()"
        )
    op.execute(
        "CREATE TRIGGER job_counts_job_removed BEFORE DELETE ON jobs "
        "FOR EACH ROW EXECUTE FUNCTION job_counts_job_removed()"
    )
    for table in ("jobs", "resource_bindings"):
        op.execute(
            f"CREATE TRIGGER job_counts_truncated AFTER TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION job_counts_rebuild()"
        )
    op.execute("SELECT rebuild_job_counts()")


def downgrade() -> None:
    for table in ("jobs", "resource_bindings"):
        op.execute(f"DROP TRIGGER IF EXISTS job_counts_truncated ON {table}")
    op.execute("DROP TRIGGER IF EXISTS job_counts_job_removed ON jobs")
    op.execute("DROP FUNCTION IF EXISTS job_counts_job_removed()")
    for table, _, _, fn in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {fn} ON {table}")
    for name in _FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.execute("DROP FUNCTION IF EXISTS rebuild_job_counts()")
    op.drop_table("job_counts")
