"""A HyperJob's children (jobs labelled ``volcano.sh/hyperjob-name``, index ix_jobs_hyperjob): for
its status, cancel and delete, and for the hub when one fails (its failure policy and siblings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model import hyperjob
from vglobal.model.records import JobRow
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.tables import jobs, resource_bindings

# Written as the index has it, so that the planner uses it whatever the parameters.
_hyperjob_name = sa.literal_column(f"(jobs.labels ->> '{hyperjob.HYPERJOB_LABEL}')", sa.Text)


class Child(NamedTuple):
    uid: str
    namespace: str
    hyperjob: str
    policy: str
    attempts: int


def children_of(uids: Sequence[str], *, session: Session) -> dict[str, Child]:
    """The jobs among ``uids`` that are HyperJobs' children, with their policy and attempts."""
    if not uids:
        return {}
    policy = jobs.c.manifest["metadata"]["annotations"][hyperjob.FAILURE_POLICY_ANNOTATION].astext
    rows = session.execute(
        sa.select(jobs.c.uid, jobs.c.namespace, _hyperjob_name, policy, resource_bindings.c.attempts)
        .join(resource_bindings, resource_bindings.c.job_uid == jobs.c.uid)
        .where(jobs.c.uid.in_(list(uids)), _hyperjob_name.is_not(None))
    ).all()
    return {r[0]: Child(r[0], r[1], r[2], r[3] or hyperjob.DEFAULT_FAILURE_POLICY, int(r[4])) for r in rows}


def siblings(namespace: str, name: str, *, session: Session, lock: bool = False) -> list[str]:
    """The uids of every child of the HyperJob, in uid order; with ``lock`` their bindings are
    locked (in that order, as every writer of several bindings takes them)."""
    where = (_hyperjob_name == name, jobs.c.namespace == namespace)
    stmt = sa.select(jobs.c.uid).where(*where).order_by(jobs.c.uid)
    uids = [r[0] for r in session.execute(stmt)]
    if lock and uids:
        session.execute(
            sa.select(resource_bindings.c.job_uid)
            .where(resource_bindings.c.job_uid.in_(uids))
            .order_by(resource_bindings.c.job_uid)
            .with_for_update()
        ).all()
    return uids


def children(namespace: str, name: str = "", *, session: Session) -> list[JobRow]:
    """The children of the HyperJob ``name`` (every HyperJob's when empty) in ``namespace`` (every
    namespace when empty)."""
    where: list[sa.ColumnElement[bool]] = [_hyperjob_name == name] if name else [_hyperjob_name.is_not(None)]
    if namespace:
        where.append(jobs.c.namespace == namespace)
    uids = [r[0] for r in session.execute(sa.select(jobs.c.uid).where(*where))]
    return list(jobs_repo.by_uids(uids, session=session).values())


def exclude_others(uid: str, cluster: str, until: float, *, session: Session) -> None:
    """Skip every cluster but ``cluster`` for the job until ``until`` (epoch seconds)."""
    session.execute(
        sa.text(
            "UPDATE resource_bindings SET excluded_clusters = excluded_clusters || COALESCE("
            "  (SELECT jsonb_object_agg(name, CAST(:until AS double precision)) FROM clusters "
            "   WHERE name <> :cluster), '{}'::jsonb) "
            "WHERE job_uid = :uid"
        ),
        {"uid": uid, "cluster": cluster, "until": until},
    )
