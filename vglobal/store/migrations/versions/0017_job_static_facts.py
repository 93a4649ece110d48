"""Jobs keep the manifest facts admission reads (``jobs.facts``), written once at submit.

Each snapshot read ten SQL/JSON path queries over every new job's manifest (its preemptable flags,
pod preemption policies, anti-affinity terms, templates' labels, kind, tasks' PriorityClasses):
about 0.15 ms of Postgres per job, in every cycle that sees the job. The hub now computes them
when it stores the job (vglobal/model/static_facts.py); this backfills stored jobs in one UPDATE
with the very queries the snapshot ran, so an upgraded database decides as before.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def _flag(where: str) -> tuple[str, str]:
    has = f'$.spec.tasks[*] ? (exists(@.template.metadata.{where}."volcano.sh/preemptable"))'
    return f"'{has}.name'", f"'{has}.template.metadata.{where}.\"volcano.sh/preemptable\"'"


_A, _AV = _flag("annotations")
_L, _LV = _flag("labels")
# Each key as static_facts.py writes it; a path result that is empty becomes NULL and is left out.
_PATHS = {
    "a": _A,
    "av": _AV,
    "l": _L,
    "lv": _LV,
    "pp": "'$.spec.tasks[*].template.spec.preemptionPolicy'",
    "anti": "'$.spec.tasks[*].template.spec.affinity.podAntiAffinity."
    "requiredDuringSchedulingIgnoredDuringExecution[*]'",
    "ln": "'$.spec.tasks[*] ? (exists(@.template.metadata.labels)).name'",
    "lt": "'$.spec.tasks[*] ? (exists(@.template.metadata.labels)).template.metadata.labels'",
}
_VALUES = {
    "ja": "manifest #> '{metadata,annotations,volcano.sh/preemptable}'",
    "jl": "manifest #> '{metadata,labels,volcano.sh/preemptable}'",
    "api": "manifest -> 'apiVersion'",
    "kind": "manifest -> 'kind'",
    "pcs": (
        "(SELECT jsonb_object_agg(t->>'name', t#>>'{template,spec,priorityClassName}') "
        "FROM jsonb_array_elements(CASE jsonb_typeof(manifest->'spec'->'tasks') "
        "WHEN 'array' THEN manifest->'spec'->'tasks' END) t "
        "WHERE t->>'name' IS NOT NULL AND t#>>'{template,spec,priorityClassName}' IS NOT NULL)"
    ),
}
_ENTRIES = ", ".join(
    [f"'{k}', NULLIF(jsonb_path_query_array(manifest, {q}), '[]')" for k, q in _PATHS.items()]
    + [f"'{k}', {e}" for k, e in _VALUES.items()]
)
BACKFILL = (
    "UPDATE jobs SET facts = (SELECT COALESCE(jsonb_object_agg(key, value), '{}') "
    f"FROM jsonb_each(jsonb_build_object({_ENTRIES})) WHERE value <> 'null')"
)


def upgrade() -> None:
    op.execute("ALTER TABLE jobs ADD COLUMN facts jsonb")
    # No placements change here: the trigger that looks for such changes would only compare them.
    op.execute("ALTER TABLE jobs DISABLE TRIGGER placements_touch_bindings")
    op.execute(BACKFILL)
    op.execute("ALTER TABLE jobs ENABLE TRIGGER placements_touch_bindings")
    # No default: whatever stores a job says its facts (a default would hide a writer that forgot).
    op.execute("ALTER TABLE jobs ALTER COLUMN facts SET NOT NULL")


def downgrade() -> None:
    op.execute("ALTER TABLE jobs DROP COLUMN facts")
