"""ResourceBinding transitions. Every write that can race is conditional on phase and generation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import psycopg
import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.phases import BindingPhase
from vglobal.store.engine import joined, rowcount
from vglobal.store.tables import jobs, resource_bindings

HOLDING = [p.value for p in (BindingPhase.Dispatched, BindingPhase.Bound, BindingPhase.Running)]


@dataclass(frozen=True)
class BindingView:
    """What the dispatcher and the agent streams need of a binding and its job."""

    job_uid: str
    namespace: str
    name: str
    queue: str
    priority: int
    created_at: datetime
    waiting_since: datetime
    request: dict[str, int]
    gang: list[list[Any]]
    placement: dict[str, Any]
    pod_requests: dict[str, dict[str, int]]
    placements: list[dict[str, Any]]
    phase: str
    cluster: str | None
    generation: int
    attempts: int
    excluded_clusters: dict[str, float]
    reason: str


_VIEW = [
    resource_bindings.c.job_uid,
    jobs.c.namespace,
    jobs.c.name,
    jobs.c.queue,
    jobs.c.priority,
    jobs.c.created_at,
    resource_bindings.c.waiting_since,
    jobs.c.request,
    jobs.c.gang,
    jobs.c.placement,
    jobs.c.pod_requests,
    jobs.c.placements,
    resource_bindings.c.phase,
    resource_bindings.c.cluster,
    resource_bindings.c.generation,
    resource_bindings.c.attempts,
    resource_bindings.c.excluded_clusters,
    resource_bindings.c.reason,
]


def _views(stmt: sa.Select[Any], session: Session) -> list[BindingView]:
    return [BindingView(*r) for r in session.execute(stmt).all()]


def _join() -> Any:
    return resource_bindings.join(jobs, jobs.c.uid == resource_bindings.c.job_uid)


def holding(*, session: Session, cluster: str | None = None) -> list[BindingView]:
    """Admitted, unfinished bindings (they hold queue usage and cluster capacity)."""
    stmt = sa.select(*_VIEW).select_from(_join()).where(resource_bindings.c.phase.in_(HOLDING))
    if cluster is not None:
        stmt = stmt.where(resource_bindings.c.cluster == cluster)
    return _views(stmt, session)


def admit(decisions: Sequence[tuple[str, str]], *, session: Session) -> list[tuple[str, str, int]]:
    """Suspended → Dispatched for many bindings in one statement; returns (uid, cluster, generation).

    A binding that is no longer Suspended (cancelled, or admitted by another replica) is skipped.
    """
    return admit_written(decisions, session=session)[0]


def admit_written(
    decisions: Sequence[tuple[str, str]], *, session: Session
) -> tuple[list[tuple[str, str, int]], Written]:
    """``admit``, and the admitted bindings as it left them (see ``Written``)."""
    if not decisions:
        return [], Written([], set())
    with _cursor(session) as cur:
        cur.execute(
            "UPDATE resource_bindings AS b SET phase = 'Dispatched', cluster = d.cluster, "
            "generation = b.generation + 1, reason = '', dispatched_at = now(), updated_at = now() "
            "FROM unnest(string_to_array(%(uids)s, ','), string_to_array(%(clusters)s, ',')) "
            "AS d(uid, cluster) "
            "WHERE b.job_uid = d.uid AND b.phase = 'Suspended' "
            # Dispatched: what _LIVE_COLUMNS reads of such a row is all in the binding.
            f"RETURNING b.generation, {_BINDING_COLUMNS}, NULL, {_DISPATCHED_AT}, {_XMIN}",
            {"uids": joined([u for u, _ in decisions]), "clusters": joined([c for _, c in decisions])},
        )
        got = cur.fetchall()
    done = [(r[1], r[3], int(r[0])) for r in got]
    return done, Written([LiveBinding._make(r[1:-1]) for r in got], {int(r[-1]) for r in got})


def log_dispatched(admitted: Sequence[tuple[str, str, int]], *, session: Session) -> None:
    """A `Dispatched` event per admission, built by the server from (uid, cluster, generation)."""
    if not admitted:
        return
    session.execute(
        sa.text(
            "INSERT INTO events (job_uid, cluster, reason, message) "
            "SELECT d.uid, d.cluster, 'Dispatched', "
            "'admitted to cluster ' || d.cluster || ' (generation ' || d.gen || ')' "
            "FROM unnest(string_to_array(:uids, ','), string_to_array(:clusters, ','), "
            "CAST(string_to_array(:gens, ',') AS int[])) AS d(uid, cluster, gen)"
        ),
        {
            "uids": joined([u for u, _, _ in admitted]),
            "clusters": joined([c for _, c, _ in admitted]),
            "gens": ",".join(str(g) for _, _, g in admitted),
        },
    )


def repair_dispatched(*, session: Session) -> int:
    """Write the `Dispatched` event of every admission that has none; returns how many.

    A cycle commits its admissions before their events (a second transaction), so a hub that died
    in between left admissions without one. The leader that takes over writes them.
    """
    res = session.execute(
        sa.text(
            "INSERT INTO events (job_uid, cluster, reason, message) "
            "SELECT b.job_uid, b.cluster, 'Dispatched', "
            "'admitted to cluster ' || coalesce(b.cluster, '(re-queued since)') "
            "|| ' (generation ' || b.generation || ')' "
            "FROM resource_bindings b WHERE b.generation > 0 AND NOT EXISTS ("
            "  SELECT 1 FROM events e WHERE e.job_uid = b.job_uid AND e.reason = 'Dispatched' "
            "  AND e.message LIKE '% (generation ' || b.generation || ')')"
        )
    )
    return rowcount(res)


class Written(NamedTuple):
    """The bindings a write of this hub changed, as it left them, and the transactions that wrote
    them: their row versions, which a later ``changed_since`` may skip, since the caller holds
    them already."""

    rows: list[LiveBinding]
    xids: set[int]  # 32-bit transaction ids, as a row's xmin holds them


def set_reasons(reasons: Sequence[tuple[str, str]], *, session: Session) -> Written:
    """Record why Suspended bindings wait; only rows whose reason changed are written.

    Many jobs wait for the same reason: each distinct text is sent once, and rows refer to it by
    position (tens of thousands of rows, a few thousand texts). The rows come back as
    ``LiveBinding``s: a writer that changed one since the caller's read is then seen here, so the
    caller need not read these rows again.
    """
    if not reasons:
        return Written([], set())
    texts: dict[str, int] = {}
    refs = [texts.setdefault(r, len(texts) + 1) for _, r in reasons]  # SQL arrays count from 1
    with _cursor(session) as cur:
        cur.execute(
            "UPDATE resource_bindings AS b SET reason = (CAST(%(texts)s AS text[]))[d.ref], "
            "updated_at = now() "
            "FROM unnest(string_to_array(%(uids)s, ','), CAST(string_to_array(%(refs)s, ',') AS int[])) "
            "AS d(uid, ref) "
            "WHERE b.job_uid = d.uid AND b.phase = 'Suspended' "
            "AND b.reason IS DISTINCT FROM (CAST(%(texts)s AS text[]))[d.ref] "
            # Suspended: what _LIVE_COLUMNS reads of such a row is all in the binding.
            f"RETURNING {_BINDING_COLUMNS}, NULL, {_DISPATCHED_AT}, {_XMIN}",
            {"uids": joined([u for u, _ in reasons]), "refs": ",".join(map(str, refs)), "texts": list(texts)},
        )
        got = cur.fetchall()
    return Written([LiveBinding._make(r[:-1]) for r in got], {int(r[-1]) for r in got})


def requeue(
    uids: Sequence[str], *, session: Session, reason: str, exclude_until: float | None = None
) -> list[tuple[str, str | None, int]]:
    """Back to Suspended, which fences off the old run; returns (uid, old cluster, generation).

    The next admission gives the binding a new generation, so a late report of the old run can
    never be taken for the new one.

    With ``exclude_until`` (epoch seconds) the old cluster is excluded until then.
    """
    if not uids:
        return []
    rows = session.execute(
        sa.text(
            "UPDATE resource_bindings AS b SET phase = 'Suspended', "
            "excluded_clusters = CASE WHEN CAST(:until AS double precision) IS NULL OR b.cluster IS NULL "
            "  THEN b.excluded_clusters "
            "  ELSE b.excluded_clusters "
            "  || jsonb_build_object(b.cluster, CAST(:until AS double precision)) END, "
            "cluster = NULL, attempts = b.attempts + 1, reason = :reason, "
            "waiting_since = now(), updated_at = now() "
            "FROM (SELECT job_uid, cluster AS old_cluster FROM resource_bindings "
            "      WHERE job_uid = ANY(:uids) AND phase = ANY(:holding) FOR UPDATE) AS o "
            "WHERE b.job_uid = o.job_uid "
            "RETURNING b.job_uid, o.old_cluster, b.generation"
        ),
        {"uids": list(uids), "holding": HOLDING, "reason": reason, "until": exclude_until},
    ).all()
    if rows:
        session.execute(
            sa.update(jobs).where(jobs.c.uid.in_([r[0] for r in rows])).values(phase="Pending", placements=[])
        )
    return [(r[0], r[1], int(r[2])) for r in rows]


def current(uid: str, *, session: Session, for_update: bool = False) -> tuple[str, str | None, int] | None:
    """(phase, cluster, generation) of a binding."""
    stmt = sa.select(
        resource_bindings.c.phase, resource_bindings.c.cluster, resource_bindings.c.generation
    ).where(resource_bindings.c.job_uid == uid)
    if for_update:
        stmt = stmt.with_for_update()
    r = session.execute(stmt).first()
    return (r[0], r[1], int(r[2])) if r else None


def generations(uids: Sequence[str], *, session: Session) -> dict[str, tuple[str, str | None, int]]:
    if not uids:
        return {}
    rows = session.execute(
        sa.select(
            resource_bindings.c.job_uid,
            resource_bindings.c.phase,
            resource_bindings.c.cluster,
            resource_bindings.c.generation,
        ).where(resource_bindings.c.job_uid.in_(list(uids)))
    ).all()
    return {r[0]: (r[1], r[2], int(r[3])) for r in rows}


def transition(
    uid: str,
    *,
    session: Session,
    cluster: str,
    generation: int,
    from_phases: Sequence[str],
    to_phase: str,
    reason: str | None = None,
) -> bool:
    """Move a binding only if it is still this cluster's run of this generation."""
    values: dict[str, Any] = {"phase": to_phase, "updated_at": sa.func.now()}
    if reason is not None:
        values["reason"] = reason
    if to_phase in (BindingPhase.Succeeded, BindingPhase.Failed, BindingPhase.Aborted):
        values["finished_at"] = sa.func.now()
    res = session.execute(
        sa.update(resource_bindings)
        .where(
            resource_bindings.c.job_uid == uid,
            resource_bindings.c.cluster == cluster,
            resource_bindings.c.generation == generation,
            resource_bindings.c.phase.in_(list(from_phases)),
        )
        .values(values)
    )
    return bool(rowcount(res))


def abort(uid: str, *, session: Session, reason: str) -> tuple[str, str | None, int] | None:
    """Cancel: any unfinished binding becomes Aborted (a running one is stopped by its agent)."""
    r = session.execute(
        sa.update(resource_bindings)
        .where(
            resource_bindings.c.job_uid == uid,
            resource_bindings.c.phase.in_([BindingPhase.Suspended.value, *HOLDING]),
        )
        .values(
            phase=BindingPhase.Aborted.value,
            reason=reason,
            finished_at=sa.func.now(),
            updated_at=sa.func.now(),
        )
        .returning(resource_bindings.c.phase, resource_bindings.c.cluster, resource_bindings.c.generation)
    ).first()
    return (r[0], r[1], int(r[2])) if r else None


def to_deliver(cluster: str, *, session: Session) -> list[tuple[str, int, dict[str, Any], str, int, str]]:
    """Bindings this cluster's agent should run: (uid, generation, manifest, queue, priority, phase)."""
    rows = session.execute(
        sa.select(
            resource_bindings.c.job_uid,
            resource_bindings.c.generation,
            jobs.c.manifest,
            jobs.c.queue,
            jobs.c.priority,
            resource_bindings.c.phase,
        )
        .select_from(_join())
        .where(resource_bindings.c.cluster == cluster, resource_bindings.c.phase.in_(HOLDING))
    ).all()
    return [(r[0], int(r[1]), r[2], r[3], int(r[4]), r[5]) for r in rows]


def manifest_json(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, separators=(",", ":"), sort_keys=True)


class LiveBinding(NamedTuple):
    """The per-cycle changing part of an unfinished binding (the job's own fields never change).

    A NamedTuple: the dispatcher reads one per unfinished job every cycle, and the driver's rows
    become these without a Python-level constructor call.
    """

    job_uid: str
    phase: str
    cluster: str | None
    waiting_since: float  # epoch seconds
    excluded_clusters: dict[str, float] | None  # cluster -> excluded until (epoch seconds)
    placements: list[dict[str, Any]] | None  # reported pod -> node, for admitted jobs only
    dispatched_at: float | None  # epoch seconds of the current admission, for admitted jobs


LIVE_PHASES = [BindingPhase.Suspended.value, *HOLDING]

_BINDING_COLUMNS = (
    "b.job_uid, b.phase, b.cluster, CAST(extract(epoch FROM b.waiting_since) AS float8), "
    "NULLIF(b.excluded_clusters, '{}'::jsonb)"
)
_DISPATCHED_AT = "CAST(extract(epoch FROM b.dispatched_at) AS float8)"
_XMIN = "CAST(CAST(b.xmin AS text) AS bigint)"  # the writing transaction, 32-bit as rows hold it
_LIVE_COLUMNS = (
    f"{_BINDING_COLUMNS}, CASE WHEN b.phase = 'Running' THEN NULLIF(j.placements, '[]'::jsonb) END, "
    f"{_DISPATCHED_AT}"
)


def _cursor(session: Session) -> psycopg.Cursor[Any]:
    raw = session.connection().connection.dbapi_connection
    assert isinstance(raw, psycopg.Connection)
    return raw.cursor()


def live(*, session: Session) -> list[LiveBinding]:
    """Every unfinished binding; read on the driver's cursor because it is the dispatcher's hot path."""
    with _cursor(session) as cur:
        cur.execute(
            f"SELECT {_LIVE_COLUMNS} FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid "
            "WHERE b.phase = ANY(%(phases)s)",
            {"phases": LIVE_PHASES},
        )
        rows = cur.fetchall()
    return list(map(LiveBinding._make, rows))


def read_horizon(*, session: Session) -> int:
    """The oldest transaction a read starting now might not see (64-bit, never wraps).

    Every change a later read misses was made by a transaction at or above this id, so passing
    it to ``changed_since`` next time finds every row changed since that read.
    """
    with _cursor(session) as cur:
        cur.execute("SELECT CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)")
        row = cur.fetchone()
    assert row is not None
    return int(row[0])


def changed_since(
    horizon: int, *, session: Session, skip: Sequence[int] = ()
) -> tuple[list[LiveBinding], int]:
    """Bindings written by a transaction at or above ``horizon`` (in any phase, so finished ones
    can be dropped), and how many bindings are unfinished now. A change of a job's placements
    touches its binding (migration 0002), so the job rows need not be looked at. Rows whose
    current version was written by a transaction in ``skip`` are left out (the caller wrote them
    and knows them: see ``set_reasons``); a later write gives a row another ``xmin``.

    A row's ``xmin`` is the transaction that wrote its current version; ``age()`` compares those
    32-bit ids modulo wraparound (a frozen row is as old as can be). Both results come from one
    statement, so they describe the same moment: a caller whose count then differs missed a
    deleted row.
    """
    with _cursor(session) as cur:
        cur.execute(
            # One pass over the bindings collects the changed uids (and the count); the rows are
            # then fetched by key. A join on the changed set would be planned for far more rows.
            "WITH edge AS (SELECT age(xid(CAST(CAST(%(h)s AS text) AS xid8))) AS a), "
            "scan AS MATERIALIZED (SELECT count(*) FILTER (WHERE phase = ANY(%(phases)s)) AS live, "
            "  coalesce(array_agg(job_uid) FILTER (WHERE age(xmin) <= (SELECT a FROM edge) "
            "    AND NOT xmin = ANY(CAST(%(skip)s AS xid[]))), '{}') AS ids "
            "  FROM resource_bindings) "
            f"SELECT scan.live, c.* FROM scan LEFT JOIN LATERAL (SELECT {_LIVE_COLUMNS} "
            "FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid "
            "WHERE b.job_uid = ANY(scan.ids)) c ON true",
            {"h": horizon, "phases": LIVE_PHASES, "skip": [str(x) for x in skip]},
        )
        rows = cur.fetchall()
    count = int(rows[0][0])
    return [LiveBinding._make(r[1:]) for r in rows if r[1] is not None], count
