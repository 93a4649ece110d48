"""JobTemplates and JobFlows."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from vglobal.model.records import JobFlowRow, JobTemplateRow
from vglobal.store.engine import rowcount
from vglobal.store.tables import job_flows, job_templates, jobs

_t = job_templates.c
_f = job_flows.c
# A JobFlow in these phases needs no more looks, unless it still has Jobs to delete.
FINAL_PHASES = ("Succeed", "Failed")


# ---- JobTemplates


def _template(r: sa.Row[Any]) -> JobTemplateRow:
    return JobTemplateRow(namespace=r.namespace, name=r.name, manifest=r.manifest, created_at=r.created_at)


def upsert_template(namespace: str, name: str, manifest: dict[str, Any], *, session: Session) -> bool:
    """Store or replace a JobTemplate; returns whether it is new."""
    stmt = insert(job_templates).values(namespace=namespace, name=name, manifest=manifest)
    upsert = stmt.on_conflict_do_update(
        index_elements=[_t.namespace, _t.name],
        set_={"manifest": stmt.excluded.manifest, "updated_at": sa.func.now()},
    )
    # xmax is 0 on a freshly inserted row version, the updater's id on an updated one.
    return bool(session.execute(upsert.returning(sa.text("xmax = 0"))).scalar())


def get_template(namespace: str, name: str, *, session: Session) -> JobTemplateRow | None:
    r = session.execute(sa.select(job_templates).where(_t.namespace == namespace, _t.name == name)).first()
    return _template(r) if r else None


def templates_of(namespace: str, names: list[str], *, session: Session) -> dict[str, JobTemplateRow]:
    rows = session.execute(
        sa.select(job_templates).where(_t.namespace == namespace, _t.name.in_(names))
    ).all()
    return {r.name: _template(r) for r in rows}


def list_templates(*, session: Session, namespace: str = "") -> list[JobTemplateRow]:
    stmt = sa.select(job_templates).order_by(_t.namespace, _t.name)
    if namespace:
        stmt = stmt.where(_t.namespace == namespace)
    return [_template(r) for r in session.execute(stmt).all()]


def delete_template(namespace: str, name: str, *, session: Session) -> bool:
    res = session.execute(sa.delete(job_templates).where(_t.namespace == namespace, _t.name == name))
    return bool(rowcount(res))


# ---- JobFlows


def _flow(r: sa.Row[Any]) -> JobFlowRow:
    return JobFlowRow(
        uid=r.uid,
        namespace=r.namespace,
        name=r.name,
        manifest=r.manifest,
        templates=r.templates,
        phase=r.phase,
        status=r.status or {},
        created_at=r.created_at,
    )


def insert_flow(
    uid: str,
    namespace: str,
    name: str,
    manifest: dict[str, Any],
    templates: dict[str, dict[str, Any]],
    *,
    session: Session,
) -> bool:
    """Store a new JobFlow; False when one of that name exists already (nothing written)."""
    stmt = (
        insert(job_flows)
        .values(uid=uid, namespace=namespace, name=name, manifest=manifest, templates=templates)
        .on_conflict_do_nothing()
        .returning(job_flows.c.uid)
    )
    # RETURNING, not rowcount: the driver reports -1 for an INSERT ... ON CONFLICT DO NOTHING.
    return session.execute(stmt).scalar() is not None


def update_flow(
    uid: str, manifest: dict[str, Any], templates: dict[str, dict[str, Any]], *, session: Session
) -> None:
    """A JobFlow applied anew: its manifest, and the templates its Jobs are made from."""
    session.execute(
        sa.update(job_flows)
        .where(job_flows.c.uid == uid)
        .values(manifest=manifest, templates=templates, updated_at=sa.func.now())
    )


def get_flow(
    *,
    session: Session,
    uid: str | None = None,
    namespace: str = "default",
    name: str = "",
    for_update: bool = False,
) -> JobFlowRow | None:
    stmt = sa.select(job_flows)
    stmt = stmt.where(_f.uid == uid) if uid else stmt.where(_f.namespace == namespace, _f.name == name)
    if for_update:
        stmt = stmt.with_for_update()
    r = session.execute(stmt).first()
    return _flow(r) if r else None


def list_flows(*, session: Session, namespace: str = "") -> list[JobFlowRow]:
    stmt = sa.select(job_flows).order_by(_f.namespace, _f.name)
    if namespace:
        stmt = stmt.where(_f.namespace == namespace)
    return [_flow(r) for r in session.execute(stmt).all()]


def unfinished_uids(*, session: Session) -> list[str]:
    """JobFlows that need a look: those not final, final ones with a Job whose phase their status
    does not show yet (a step that was running when the flow failed), and succeeded ones whose
    Jobs are still to delete."""
    owned = jobs.c.owner_uid == _f.uid
    shown = _f.status["flows"].contains(
        sa.func.jsonb_build_array(sa.func.jsonb_build_object("job", jobs.c.name, "phase", jobs.c.phase))
    )
    stmt = (
        sa.select(_f.uid)
        .where(
            sa.or_(
                _f.phase.not_in(FINAL_PHASES),
                sa.exists().where(owned, sa.not_(shown)),
                sa.and_(
                    _f.phase == "Succeed",
                    _f.manifest["spec"]["jobRetainPolicy"].astext == "delete",
                    sa.exists().where(owned),
                ),
            )
        )
        .order_by(_f.namespace, _f.name)
    )
    return list(session.execute(stmt).scalars().all())


def save_status(uid: str, phase: str, status: dict[str, Any], *, session: Session) -> None:
    session.execute(
        sa.update(job_flows).where(_f.uid == uid).values(phase=phase, status=status, updated_at=sa.func.now())
    )


def delete_flow(uid: str, *, session: Session) -> bool:
    return bool(rowcount(session.execute(sa.delete(job_flows).where(_f.uid == uid))))
