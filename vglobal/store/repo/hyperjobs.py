"""What the hub reads of a HyperJob's children when one fails: its failure policy and siblings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model import hyperjob
from vglobal.store.tables import jobs, resource_bindings


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
    name = jobs.c.labels[hyperjob.HYPERJOB_LABEL].astext
    policy = jobs.c.manifest["metadata"]["annotations"][hyperjob.FAILURE_POLICY_ANNOTATION].astext
    rows = session.execute(
        sa.select(jobs.c.uid, jobs.c.namespace, name, policy, resource_bindings.c.attempts)
        .join(resource_bindings, resource_bindings.c.job_uid == jobs.c.uid)
        .where(jobs.c.uid.in_(list(uids)), name.is_not(None))
    ).all()
    return {r[0]: Child(r[0], r[1], r[2], r[3] or hyperjob.DEFAULT_FAILURE_POLICY, int(r[4])) for r in rows}


def siblings(namespace: str, name: str, *, session: Session) -> list[str]:
    """Every child of the HyperJob (the failed one too)."""
    label = jobs.c.labels[hyperjob.HYPERJOB_LABEL].astext
    rows = session.execute(sa.select(jobs.c.uid).where(jobs.c.namespace == namespace, label == name))
    return [r[0] for r in rows]


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
