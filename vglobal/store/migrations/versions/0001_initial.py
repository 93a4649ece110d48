"""Initial schema: queues, priority classes, jobs, resource bindings, clusters, events.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "clusters",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("labels", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("state", sa.Text(), server_default="Ready", nullable=False),
        sa.Column("cordoned", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("nodes", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.Column("free", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("hypernodes", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.Column(
            "last_heartbeat", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("not_ready_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "registered_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_clusters")),
    )
    op.create_table(
        "priority_classes",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("global_default", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("preemption_policy", sa.Text(), server_default="PreemptLowerPriority", nullable=False),
        sa.Column("manifest", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_priority_classes")),
    )
    op.create_table(
        "queues",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("parent", sa.Text(), nullable=True),
        sa.Column("weight", sa.Integer(), server_default="1", nullable=False),
        sa.Column("priority", sa.Integer(), server_default="0", nullable=False),
        sa.Column("state", sa.Text(), server_default="Open", nullable=False),
        sa.Column("reclaimable", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("capability", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("deserved", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("guarantee", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("manifest", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("status", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_queues")),
    )
    op.create_table(
        "jobs",
        sa.Column("uid", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("request_id", sa.Text(), nullable=True),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("priority_class_name", sa.Text(), nullable=True),
        sa.Column("priority", sa.Integer(), server_default="0", nullable=False),
        sa.Column("min_available", sa.Integer(), nullable=False),
        sa.Column("request", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("gang", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "pod_requests", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False
        ),
        sa.Column("placement", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column("manifest", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("phase", sa.Text(), server_default="Pending", nullable=False),
        sa.Column("retry_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("tasks", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.Column("placements", postgresql.JSONB(astext_type=sa.Text()), server_default="[]", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["queue"], ["queues.name"], name=op.f("fk_jobs_queue_queues")),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_jobs")),
        sa.UniqueConstraint("namespace", "name", name="uq_jobs_namespace_name"),
        sa.UniqueConstraint("request_id", name=op.f("uq_jobs_request_id")),
    )
    op.create_index("ix_jobs_queue", "jobs", ["queue"], unique=False)
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("time", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("job_uid", sa.Text(), nullable=True),
        sa.Column("cluster", sa.Text(), nullable=True),
        sa.Column("kind", sa.Text(), server_default="Normal", nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("message", sa.Text(), server_default="", nullable=False),
        sa.Column("source", sa.Text(), server_default="hub", nullable=False),
        sa.ForeignKeyConstraint(
            ["job_uid"], ["jobs.uid"], name=op.f("fk_events_job_uid_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index("ix_events_job_uid", "events", ["job_uid"], unique=False)
    op.create_table(
        "resource_bindings",
        sa.Column("job_uid", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text(), server_default="Suspended", nullable=False),
        sa.Column("cluster", sa.Text(), nullable=True),
        sa.Column("generation", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("resources", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "excluded_clusters", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False
        ),
        sa.Column("reason", sa.Text(), server_default="", nullable=False),
        sa.Column(
            "waiting_since", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_uid"], ["jobs.uid"], name=op.f("fk_resource_bindings_job_uid_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_uid", name=op.f("pk_resource_bindings")),
    )
    op.create_index(
        "ix_resource_bindings_phase_cluster", "resource_bindings", ["phase", "cluster"], unique=False
    )
    # The queue every job lands in when it names none exists from the first start.
    op.execute(
        "INSERT INTO queues (name, parent, manifest) VALUES ('default', 'root', "
        '\'{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", '
        '"metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": true}}\')'
    )


def downgrade() -> None:
    op.drop_index("ix_resource_bindings_phase_cluster", table_name="resource_bindings")
    op.drop_table("resource_bindings")
    op.drop_index("ix_events_job_uid", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_jobs_queue", table_name="jobs")
    op.drop_table("jobs")
    op.drop_table("queues")
    op.drop_table("priority_classes")
    op.drop_table("clusters")
