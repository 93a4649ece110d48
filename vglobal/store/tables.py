"""The schema. Alembic migrations under ``migrations/versions`` create exactly these tables."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from vglobal.model.hyperjob import HYPERJOB_LABEL as HYPERJOB_NAME_LABEL
from vglobal.model.phases import ClusterState

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

NOW = sa.text("now()")

queues = sa.Table(
    "queues",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("parent", sa.Text, nullable=True),
    sa.Column("weight", sa.Integer, nullable=False, server_default="1"),
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("state", sa.Text, nullable=False, server_default="Open"),
    sa.Column("reclaimable", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("capability", JSONB, nullable=True),
    sa.Column("deserved", JSONB, nullable=True),
    sa.Column("guarantee", JSONB, nullable=False, server_default="{}"),
    sa.Column("manifest", JSONB, nullable=False),
    # Written by the dispatcher each cycle: {"deserved": units, "capability": units | null}
    sa.Column("status", JSONB, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
)

# Fair share over time (admission/share/usage.py): each queue's decayed usage as of `at` (the database's
# clock, epoch seconds), upserted by the leader every few seconds so the next leader continues it.
queue_usage = sa.Table(
    "queue_usage",
    metadata,
    sa.Column("queue", sa.Text, primary_key=True),
    sa.Column("usage", JSONB, nullable=False),  # the queue's own jobs: resource -> resource-seconds
    sa.Column("rolled", JSONB, nullable=False),  # with its descendants', as shown
    sa.Column("share", sa.Float, nullable=False),  # dominant decayed share of deserved
    sa.Column("at", sa.Float, nullable=False),
)

# GPU-seconds each queue's jobs held, per UTC day (epoch day number): what its GPU-hour budget is
# charged against (migration 0021).
queue_spend = sa.Table(
    "queue_spend",
    metadata,
    sa.Column("queue", sa.Text, primary_key=True),
    sa.Column("day", sa.Integer, primary_key=True),
    sa.Column("gpu_seconds", sa.Float, nullable=False),
)

# Claims on room freed by victims (admission/victims/claims.py), one per job they were taken for,
# as the last dispatch cycle returned them: the next cycle's input, the next leader's too.
admission_claims = sa.Table(
    "admission_claims",
    metadata,
    sa.Column("for_uid", sa.Text, primary_key=True),
    sa.Column("claim", JSONB, nullable=False),  # admission/inputs.py claim_row
)

# When each waiting job is expected to start (epoch seconds; NULL = cannot tell), on which cluster
# and behind how many jobs of its queue, as the leader's last forecast saw it (migration 0019).
job_estimates = sa.Table(
    "job_estimates",
    metadata,
    sa.Column("job_uid", sa.Text, sa.ForeignKey("jobs.uid", ondelete="CASCADE"), primary_key=True),
    sa.Column("start", sa.Float, nullable=True),
    sa.Column("cluster", sa.Text, nullable=False, server_default=""),
    sa.Column("ahead", sa.Integer, nullable=False, server_default="0"),
    sa.Column("computed_at", sa.Float, nullable=False),
)

priority_classes = sa.Table(
    "priority_classes",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("value", sa.Integer, nullable=False),
    sa.Column("global_default", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("preemption_policy", sa.Text, nullable=False, server_default="PreemptLowerPriority"),
    sa.Column("manifest", JSONB, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
)

# v1 Namespaces applied to the hub: a job naming no queue takes its namespace's queue annotation
# (migration 0021).
namespaces = sa.Table(
    "namespaces",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("queue", sa.Text, nullable=False, server_default=""),
    sa.Column("manifest", JSONB, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
)

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("uid", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("request_id", sa.Text, nullable=True, unique=True),
    sa.Column("queue", sa.Text, sa.ForeignKey("queues.name"), nullable=False),
    sa.Column("priority_class_name", sa.Text, nullable=True),
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("min_available", sa.Integer, nullable=False),
    sa.Column("request", JSONB, nullable=False),
    sa.Column("gang", JSONB, nullable=False),
    # {task name: per-pod request units}, to turn reported pod placements into per-node usage
    sa.Column("pod_requests", JSONB, nullable=False, server_default="{}"),
    sa.Column("placement", JSONB, nullable=False, server_default="{}"),
    sa.Column("manifest", JSONB, nullable=False),
    sa.Column("phase", sa.Text, nullable=False, server_default="Pending"),
    sa.Column("retry_count", sa.Integer, nullable=False, server_default="0"),
    # The insides of gang, placement, tasks and placements: vglobal/model/forms.py
    sa.Column("tasks", JSONB, nullable=False, server_default="[]"),
    sa.Column("placements", JSONB, nullable=False, server_default="[]"),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    # metadata.labels, for watch filters (migration 0006)
    sa.Column("labels", JSONB, nullable=False, server_default="{}"),
    # The CronJob or JobFlow that made the job (its uid), if one did (migration 0006)
    sa.Column("owner_uid", sa.Text, nullable=True),
    # Who submitted it: the audit's principal of its Submitted event (migration 0009)
    sa.Column("submitted_by", sa.Text, nullable=True),
    # What admission reads of the manifest, taken once at submit (vglobal/model/static_facts.py;
    # migration 0017). No default: every writer of a job gives its facts.
    sa.Column("facts", JSONB, nullable=False),
    # kubectl's apply (migration 0019): metadata.generation, status.observedGeneration (what its
    # cluster runs), and per field path the manager that set it (server-side apply's conflicts).
    sa.Column("spec_generation", sa.BigInteger, nullable=False, server_default="1"),
    sa.Column("observed_generation", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("managed_fields", JSONB, nullable=False, server_default="{}"),
    sa.UniqueConstraint("namespace", "name", name="uq_jobs_namespace_name"),
    sa.Index(
        "ix_jobs_respecified",
        "uid",
        postgresql_where=sa.text("spec_generation > 1 AND spec_generation > observed_generation"),
    ),
    sa.Index("ix_jobs_queue", "queue", "uid"),
    sa.Index("ix_jobs_owner_uid", "owner_uid"),
    # The job list's sort orders and filters, and the counts (migration 0009)
    sa.Index("ix_jobs_created_at", "created_at", "uid"),
    sa.Index("ix_jobs_queue_created_at", "queue", "created_at", "uid"),
    sa.Index("ix_jobs_queue_namespace_name", "queue", "namespace", "name"),
    sa.Index("ix_jobs_name", "name", "uid"),
    sa.Index("ix_jobs_phase", "phase", "uid"),
    sa.Index("ix_jobs_queue_phase", "queue", "phase", "uid", postgresql_include=["namespace"]),
    sa.Index(
        "ix_jobs_submitted_by",
        "submitted_by",
        "created_at",
        "uid",
        postgresql_where=sa.text("submitted_by IS NOT NULL"),
    ),
    sa.Index("ix_jobs_name_trgm", "name", postgresql_using="gin", postgresql_ops={"name": "gin_trgm_ops"}),
    # A HyperJob's children, by its name (migration 0013)
    sa.Index(
        "ix_jobs_hyperjob",
        sa.text(f"(labels ->> '{HYPERJOB_NAME_LABEL}')"),
        "namespace",
        postgresql_where=sa.text(f"(labels ->> '{HYPERJOB_NAME_LABEL}') IS NOT NULL"),
    ),
)

resource_bindings = sa.Table(
    "resource_bindings",
    metadata,
    sa.Column("job_uid", sa.Text, sa.ForeignKey("jobs.uid", ondelete="CASCADE"), primary_key=True),
    sa.Column("phase", sa.Text, nullable=False, server_default="Suspended"),
    sa.Column("cluster", sa.Text, nullable=True),
    sa.Column("generation", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("resources", JSONB, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("excluded_clusters", JSONB, nullable=False, server_default="{}"),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
    # The WaitKind of `reason` while the job waits (migration 0004); empty otherwise.
    sa.Column("reason_kind", sa.Text, nullable=False, server_default=""),
    sa.Column("waiting_since", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    # Pod uids of the current run its agent is to evict (preemption; migration 0012).
    sa.Column("evictions", JSONB, nullable=False, server_default="[]"),
    # Node names its current run's pods try first: where admission made room by preemption or
    # reclaim (migration 0015).
    sa.Column("nominated", JSONB, nullable=False, server_default="[]"),
    # When the current run last saved its work (a reclaim loses only the run since; migration
    # 0025); NULL: never, or the job was dispatched again since.
    sa.Column("checkpointed_at", sa.DateTime(timezone=True), nullable=True),
    sa.Index("ix_resource_bindings_phase_cluster", "phase", "cluster"),
    # Sorting the job list by cluster (migration 0009)
    sa.Index("ix_resource_bindings_cluster_sort", sa.text("coalesce(cluster, '')"), "job_uid"),
    # The dispatcher's reads and the retention loop stay off finished history: see migration 0007.
    sa.Index(
        "ix_resource_bindings_unfinished",
        "job_uid",
        postgresql_where=sa.text("phase IN ('Suspended', 'Dispatched', 'Bound', 'Running')"),
    ),
    sa.Index(
        "ix_resource_bindings_evictions", "cluster", postgresql_where=sa.text("evictions <> '[]'::jsonb")
    ),
    sa.Index(
        "ix_resource_bindings_finished_at",
        "finished_at",
        postgresql_where=sa.text("phase IN ('Succeeded', 'Failed', 'Aborted')"),
    ),
    # Room for HOT updates: see migration 0003.
    postgresql_with={"fillfactor": 75},
)

clusters = sa.Table(
    "clusters",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("labels", JSONB, nullable=False, server_default="{}"),
    sa.Column("state", sa.Text, nullable=False, server_default=ClusterState.Ready.value),
    sa.Column("cordoned", sa.Boolean, nullable=False, server_default=sa.false()),
    # [{name, labels, allocatable: units, taints, unschedulable}]
    sa.Column("nodes", JSONB, nullable=False, server_default="[]"),
    # {node name: units}
    sa.Column("free", JSONB, nullable=False, server_default="{}"),
    # {node name: [card as CardFree.to_json()]}, nodes with GPU cards only (migration 0014)
    sa.Column("devices", JSONB, nullable=False, server_default="{}"),
    # [{name, tier, tier_name, parent, nodes, children}] as the agent resolved them
    sa.Column("hypernodes", JSONB, nullable=False, server_default="[]"),
    # [{name, allocatable: units, labels, current, max, provision_seconds}]: pools it can grow (0021)
    sa.Column("pools", JSONB, nullable=False, server_default="[]"),
    sa.Column("last_heartbeat", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("not_ready_since", sa.DateTime(timezone=True), nullable=True),
    sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    # The agent stream that speaks for the cluster, and who opened it (see migration 0005).
    sa.Column("stream", sa.Text, nullable=True),
    sa.Column("stream_identity", sa.Text, nullable=True),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("time", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("job_uid", sa.Text, sa.ForeignKey("jobs.uid", ondelete="CASCADE"), nullable=True),
    sa.Column("cluster", sa.Text, nullable=True),
    sa.Column("kind", sa.Text, nullable=False, server_default="Normal"),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False, server_default=""),
    sa.Column("source", sa.Text, nullable=False, server_default="hub"),
    # Who made the call, and what a job-less event is about (see migration 0005).
    sa.Column("principal", sa.Text, nullable=True),
    sa.Column("subject", sa.Text, nullable=True),
    # A CronJob's or JobFlow's events (migration 0006): the uid of the one they are about
    sa.Column("owner_uid", sa.Text, nullable=True),
    sa.Index("ix_events_job_uid", "job_uid"),
    sa.Index("ix_events_subject", "subject", postgresql_where=sa.text("subject IS NOT NULL")),
    sa.Index("ix_events_owner_uid", "owner_uid"),
)

cron_jobs = sa.Table(
    "cron_jobs",
    metadata,
    sa.Column("uid", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("manifest", JSONB, nullable=False),
    # model.workflow_status.CronStatus as JSON (vglobal/store/repo/cronjobs.py)
    sa.Column("status", JSONB, nullable=False, server_default="{}"),
    # When the schedule next asks the leader to look; null while suspended
    sa.Column("next_time", sa.DateTime(timezone=True), nullable=True),
    # By the hub's clock, the one that reads the schedule
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.UniqueConstraint("namespace", "name", name="uq_cron_jobs_namespace_name"),
)

job_templates = sa.Table(
    "job_templates",
    metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("manifest", JSONB, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
)

job_flows = sa.Table(
    "job_flows",
    metadata,
    sa.Column("uid", sa.Text, primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("manifest", JSONB, nullable=False),
    # {flow name: JobTemplate manifest}: the templates as they were when the JobFlow was applied
    sa.Column("templates", JSONB, nullable=False),
    sa.Column("phase", sa.Text, nullable=False, server_default="Pending"),
    # model.workflow_status.JobFlowStatus as JSON (vglobal/store/repo/jobflows.py)
    sa.Column("status", JSONB, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.UniqueConstraint("namespace", "name", name="uq_job_flows_namespace_name"),
)

# Every change of a job, written by triggers in the changing transaction (migration 0006). A
# change gets its revision after it commits (store/repo/job_changes.sequence), so revisions follow
# commit order and a reader at revision R has seen every change numbered up to R.
job_changes = sa.Table(
    "job_changes",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    # The writing transaction (64-bit): its changes of one job become one event
    sa.Column("xid", sa.BigInteger, nullable=False),
    sa.Column("revision", sa.BigInteger, nullable=True),
    sa.Column("kind", sa.Text, nullable=False),  # ADDED | MODIFIED | DELETED
    sa.Column("job_uid", sa.Text, nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("queue", sa.Text, nullable=False),
    sa.Column("labels", JSONB, nullable=False),
    # The job as the change left it (no manifest, no pods): see job_watch_state() in 0006
    sa.Column("state", JSONB, nullable=False),
    sa.Column("time", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Index("ix_job_changes_revision", "revision", unique=True),
    sa.Index("ix_job_changes_unsequenced", "id", postgresql_where=sa.text("revision IS NULL")),
)

# One row: the last revision given out, and the revision up to which changes were pruned.
job_watch = sa.Table(
    "job_watch",
    metadata,
    sa.Column("id", sa.SmallInteger, primary_key=True, autoincrement=False),
    sa.Column("last_revision", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("pruned_through", sa.BigInteger, nullable=False, server_default="0"),
)

# One row per generation of a job's binding: where it was dispatched and how the run ended.
# Written by a trigger on resource_bindings in the changing statement (migration 0009).
job_dispatches = sa.Table(
    "job_dispatches",
    metadata,
    # No foreign key (its check would cost the admissions a lookup per row): a statement trigger
    # on jobs deletes a job's rows with it.
    sa.Column("job_uid", sa.Text, primary_key=True),
    sa.Column("generation", sa.BigInteger, primary_key=True),
    sa.Column("cluster", sa.Text, nullable=False),
    sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
    # Completed | Failed | Cancelled | FailedOver | Drained | Rejected | Reclaimed | Requeued | Unknown
    sa.Column("outcome", sa.Text, nullable=False, server_default=""),
    sa.Column("fenced", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("reason", sa.Text, nullable=False, server_default=""),
)

# What the leader samples of each queue once a minute (migration 0009); amounts in units.
queue_samples = sa.Table(
    "queue_samples",
    metadata,
    sa.Column("queue", sa.Text, primary_key=True),
    sa.Column("time", sa.DateTime(timezone=True), primary_key=True),
    sa.Column("allocated", JSONB, nullable=False, server_default="{}"),
    sa.Column("deserved", JSONB, nullable=False, server_default="{}"),
    sa.Column("capability", JSONB, nullable=False, server_default="{}"),
    sa.Column("guarantee", JSONB, nullable=False, server_default="{}"),
    sa.Column("pending", sa.Integer, nullable=False, server_default="0"),
    sa.Column("running", sa.Integer, nullable=False, server_default="0"),
    sa.Column("share", sa.Float, nullable=False, server_default="0"),
    sa.Index("ix_queue_samples_time", "time"),
)

# Job counts as signed deltas per key, appended by triggers on jobs and resource_bindings and
# folded by the leader (migration 0011): a key's count is the sum of its rows. "" is no binding
# (binding_phase) or no cluster; finished_hour is the binding's finish in epoch hours, -1 if none.
job_counts = sa.Table(
    "job_counts",
    metadata,
    sa.Column("queue", sa.Text, nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("phase", sa.Text, nullable=False),
    sa.Column("binding_phase", sa.Text, nullable=False),
    sa.Column("cluster", sa.Text, nullable=False),
    sa.Column("finished_hour", sa.BigInteger, nullable=False),
    sa.Column("n", sa.BigInteger, nullable=False),
)

# A job's dependencies (model/dependencies.py): v1 ConfigMaps and Secrets, sent to the agent of the
# cluster that runs a job referencing them. A Secret's values are only in ``sealed`` (encrypted by
# hub/secret_box.py); ``sizes`` holds every key's size in bytes, all an API answer shows of a Secret.
# ``revision`` moves on every write, so agent streams find the objects changed since they looked.
DEPENDENCY_REVISIONS = sa.Sequence("dependency_revisions", metadata=metadata)
dependency_objects = sa.Table(
    "dependency_objects",
    metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("kind", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("type", sa.Text, nullable=False, server_default=""),
    sa.Column("immutable", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("labels", JSONB, nullable=False, server_default="{}"),
    sa.Column("annotations", JSONB, nullable=False, server_default="{}"),
    sa.Column("sizes", JSONB, nullable=False, server_default="{}"),
    sa.Column("text_keys", JSONB, nullable=False, server_default="[]"),
    sa.Column("data", JSONB, nullable=True),  # a ConfigMap's keys, each value base64
    sa.Column("sealed", sa.LargeBinary, nullable=True),  # a Secret's, encrypted
    sa.Column(
        "revision",
        sa.BigInteger,
        nullable=False,
        server_default=sa.text("nextval('dependency_revisions')"),
        index=True,
    ),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
)
