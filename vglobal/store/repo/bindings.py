"""ResourceBinding moves and wait reasons. Every move is guarded in SQL by the phases it may start
from (``model/binding.TRANSITIONS``), and every move a run reports by that run's cluster and
generation, so a race between writers can never make a move the table refuses."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.binding import ADMITTED, BindingPhase, BindingRef, sources, values
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import joined, rowcount
from vglobal.store.repo.jobs import task_priorities
from vglobal.store.repo.live import (
    BINDING_COLUMNS,
    CHECKPOINTED,
    DISPATCHED_AT,
    EVICTIONS,
    NOTHING_WRITTEN,
    XMIN,
    LiveBinding,
    Written,
    cursor,
)
from vglobal.store.tables import jobs, resource_bindings

_ADMITTED = values(ADMITTED)
_b = resource_bindings.c


def admitted_uids(cluster: str, *, session: Session) -> list[str]:
    """Jobs admitted to ``cluster`` and not finished."""
    stmt = sa.select(_b.job_uid).where(_b.cluster == cluster, _b.phase.in_(_ADMITTED))
    return list(session.execute(stmt).scalars().all())


def flag_not_ready(cluster: str, reason: str, *, session: Session) -> list[str]:
    """The jobs admitted to ``cluster`` say it is NotReady (kind ClusterNotReady); their uids."""
    stmt = (
        sa.update(resource_bindings)
        .where(_b.cluster == cluster, _b.phase.in_(_ADMITTED))
        .values(reason=reason, reason_kind=WaitKind.ClusterNotReady.value, updated_at=sa.func.now())
        .returning(_b.job_uid)
    )
    return list(session.execute(stmt).scalars().all())


def unflag_not_ready(clusters: Sequence[str], *, session: Session) -> None:
    """The clusters are Ready again: their jobs no longer say otherwise."""
    session.execute(
        sa.update(resource_bindings)
        .where(
            _b.cluster.in_(clusters),
            _b.phase.in_(_ADMITTED),
            _b.reason_kind == WaitKind.ClusterNotReady.value,
        )
        .values(reason="", reason_kind="", updated_at=sa.func.now())
    )


def admitted_per_cluster(*, session: Session, queues: Sequence[str] | None = None) -> dict[str, int]:
    """How many unfinished jobs each cluster has been admitted; of ``queues`` only, when given."""
    stmt = (
        sa.select(_b.cluster, sa.func.count())
        .where(_b.phase.in_(_ADMITTED), _b.cluster.is_not(None))
        .group_by(_b.cluster)
    )
    if queues is not None:
        stmt = stmt.join(jobs, jobs.c.uid == _b.job_uid).where(jobs.c.queue.in_(list(queues)))
    return {c: int(n) for c, n in session.execute(stmt).all()}


def admit(decisions: Sequence[tuple[str, str]], *, session: Session) -> list[tuple[str, str, int]]:
    """Suspended → Dispatched for many bindings in one statement; returns (uid, cluster, generation).

    A binding that is no longer Suspended (cancelled, or admitted by another replica) is skipped.
    """
    return admit_written(decisions, session=session)[0]


def admit_written(
    decisions: Sequence[tuple[str, str]],
    *,
    session: Session,
    waits: Mapping[str, tuple[str, str]] | None = None,
    nominated: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[tuple[str, str, int]], Written]:
    """``admit``, and the admitted bindings as it left them (see ``Written``). ``waits`` holds, for
    jobs admitted in place of pods being evicted, (kind, sentence): their reason until they run;
    ``nominated`` their nodes made room on (the Dispatch carries them)."""
    if not decisions:
        return [], NOTHING_WRITTEN
    waits = waits or {}
    nominated = nominated or {}
    said = [waits.get(u, ("", "")) for u, _ in decisions]
    # Most cycles nominate nothing: then no column of them is sent.
    nominate = (
        ("CAST(d.nominated AS jsonb)", ", CAST(%(nominated)b AS text[])", ", nominated")
        if nominated
        else ("'[]'::jsonb", "", "")
    )
    with cursor(session) as cur:
        cur.execute(
            "UPDATE resource_bindings AS b SET phase = 'Dispatched', cluster = d.cluster, "
            "generation = b.generation + 1, reason = d.reason, reason_kind = d.kind, "
            f"dispatched_at = now(), evictions = '[]'::jsonb, updated_at = now(), nominated = {nominate[0]}, "
            "checkpointed_at = NULL "
            "FROM unnest(string_to_array(%(uids)s, ','), string_to_array(%(clusters)s, ','), "
            f"CAST(%(kinds)b AS text[]), CAST(%(reasons)b AS text[]){nominate[1]}) "
            f"AS d(uid, cluster, kind, reason{nominate[2]}) "
            "WHERE b.job_uid = d.uid AND b.phase = ANY(%(from)s) "
            # Dispatched: what the dispatcher reads of such a row is all in the binding.
            f"RETURNING b.generation, {BINDING_COLUMNS}, NULL, {DISPATCHED_AT}, NULL, {CHECKPOINTED}, {XMIN}",
            {
                "uids": joined([u for u, _ in decisions]),
                "clusters": joined([c for _, c in decisions]),
                "kinds": [k for k, _ in said],
                "reasons": [r for _, r in said],
                "from": sources(BindingPhase.Dispatched),
                **(
                    {"nominated": [json.dumps(list(nominated.get(u, ()))) for u, _ in decisions]}
                    if nominated
                    else {}
                ),
            },
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


def set_reasons(reasons: Sequence[tuple[str, str, str]], *, session: Session) -> Written:
    """Record why Suspended bindings wait, as (uid, kind, sentence); only rows whose reason
    changed are written.

    Many jobs wait for the same reason: each distinct (kind, sentence) is sent once, and rows
    refer to it by position (tens of thousands of rows, a few thousand texts). The rows come back
    as ``LiveBinding``s: a writer that changed one since the caller's read is then seen here, so
    the caller need not read these rows again.
    """
    if not reasons:
        return NOTHING_WRITTEN
    distinct: dict[tuple[str, str], int] = {}
    refs = [distinct.setdefault((k, r), len(distinct) + 1) for _, k, r in reasons]  # SQL counts from 1
    with cursor(session) as cur:
        cur.execute(
            "UPDATE resource_bindings AS b SET reason = (CAST(%(texts)b AS text[]))[d.ref], "
            "reason_kind = (CAST(%(kinds)b AS text[]))[d.ref], updated_at = now() "
            "FROM unnest(string_to_array(%(uids)s, ','), CAST(string_to_array(%(refs)s, ',') AS int[])) "
            "AS d(uid, ref) "
            "WHERE b.job_uid = d.uid AND b.phase = 'Suspended' "
            "AND (b.reason, b.reason_kind) IS DISTINCT FROM "
            "((CAST(%(texts)b AS text[]))[d.ref], (CAST(%(kinds)b AS text[]))[d.ref]) "
            # Suspended: what the dispatcher reads of such a row is all in the binding.
            f"RETURNING {BINDING_COLUMNS}, NULL, {DISPATCHED_AT}, {EVICTIONS}, {CHECKPOINTED}, {XMIN}",
            {
                "uids": joined([u for u, _, _ in reasons]),
                "refs": ",".join(map(str, refs)),
                "texts": [r for _, r in distinct],
                "kinds": [str(k) for k, _ in distinct],  # a WaitKind as its value
            },
        )
        got = cur.fetchall()
    return Written([LiveBinding._make(r[:-1]) for r in got], {int(r[-1]) for r in got})


def requeue(
    uids: Sequence[str],
    *,
    session: Session,
    kind: WaitKind,
    reason: str,
    exclude_until: float | None = None,
) -> list[tuple[str, str | None, int]]:
    """Back to Suspended, which fences off the old run; returns (uid, old cluster, generation).

    The next admission gives the binding a new generation, so a late report of the old run can
    never be taken for the new one. ``kind`` and ``reason`` say why it waits until the next cycle
    says more. With ``exclude_until`` (epoch seconds) the old cluster is excluded until then.
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
            "cluster = NULL, attempts = b.attempts + 1, reason = :reason, reason_kind = :kind, "
            "waiting_since = now(), updated_at = now() "
            "FROM (SELECT job_uid, cluster AS old_cluster FROM resource_bindings "
            "      WHERE job_uid = ANY(:uids) AND phase = ANY(:from) FOR UPDATE) AS o "
            "WHERE b.job_uid = o.job_uid "
            "RETURNING b.job_uid, o.old_cluster, b.generation"
        ),
        {
            "uids": list(uids),
            "from": sources(BindingPhase.Suspended),
            "reason": reason,
            "kind": kind.value,
            "until": exclude_until,
        },
    ).all()
    if rows:
        session.execute(
            sa.update(jobs).where(jobs.c.uid.in_([r[0] for r in rows])).values(phase="Pending", placements=[])
        )
    return [(r[0], r[1], int(r[2])) for r in rows]


_REF = (_b.phase, _b.cluster, _b.generation)


def checkpoints_locked(uids: Sequence[str], *, session: Session) -> dict[str, float | None]:
    """Each binding's last checkpoint (epoch seconds, None if none), its row locked until the
    transaction ends: no later checkpoint of that run can be kept before a move written with it."""
    if not uids:
        return {}
    with cursor(session) as cur:
        cur.execute(
            f"SELECT b.job_uid, {CHECKPOINTED} FROM resource_bindings AS b "
            "WHERE b.job_uid = ANY(%(uids)s) ORDER BY b.job_uid FOR UPDATE",
            {"uids": list(uids)},
        )
        return {uid: at for uid, at in cur.fetchall()}


def current(uid: str, *, session: Session, for_update: bool = False) -> BindingRef | None:
    """Where a job's binding stands (None: no such job)."""
    stmt = sa.select(*_REF).where(_b.job_uid == uid)
    if for_update:
        stmt = stmt.with_for_update()
    r = session.execute(stmt).first()
    return BindingRef.of(*r) if r else None


def refs(uids: Sequence[str], *, session: Session) -> dict[str, BindingRef]:
    """Where each of these jobs' bindings stands; a job that is gone is missing."""
    if not uids:
        return {}
    rows = session.execute(sa.select(_b.job_uid, *_REF).where(_b.job_uid.in_(list(uids)))).all()
    return {r[0]: BindingRef.of(r[1], r[2], r[3]) for r in rows}


def abort(uid: str, *, session: Session, reason: str) -> BindingRef | None:
    """Cancel: an unfinished binding becomes Aborted (a running one is stopped by its agent);
    returns where it stands now, or None if it had finished already."""
    r = session.execute(
        sa.update(resource_bindings)
        .where(_b.job_uid == uid, _b.phase.in_(sources(BindingPhase.Aborted)))
        .values(
            phase=BindingPhase.Aborted.value,
            reason=reason,
            reason_kind="",
            finished_at=sa.func.now(),
            updated_at=sa.func.now(),
        )
        .returning(*_REF)
    ).first()
    return BindingRef.of(*r) if r else None


def resume(uid: str, *, session: Session, reason: str) -> BindingRef | None:
    """An Aborted binding waits again for admission (``vcctl job resume``): Suspended, with no
    cluster, so its old run stays fenced off and the next admission gives a new generation; the
    job is Pending again with no pods. None if the binding was not Aborted."""
    r = session.execute(
        sa.update(resource_bindings)
        .where(_b.job_uid == uid, _b.phase == BindingPhase.Aborted.value)
        .values(
            phase=BindingPhase.Suspended.value,
            cluster=None,
            reason=reason,
            reason_kind="",
            finished_at=None,
            waiting_since=sa.func.now(),
            updated_at=sa.func.now(),
        )
        .returning(*_REF)
    ).first()
    if r is None:
        return None
    session.execute(
        sa.update(jobs)
        .where(jobs.c.uid == uid)
        .values(phase="Pending", placements=[], finished_at=None, updated_at=sa.func.now())
    )
    return BindingRef.of(*r)


class Delivery(NamedTuple):
    """A binding a cluster's agent should run, with what its Dispatch message carries."""

    job_uid: str
    generation: int
    manifest: str  # the job manifest as JSON text
    queue: str
    priority: int
    preemption_policy: str = "PreemptLowerPriority"  # its PriorityClass's
    task_priorities: dict[str, int] | None = None  # tasks with their own priorityClassName
    nominated: list[str] | None = None  # nodes admission made room on for it (preemption, reclaim)
    spec_generation: int = 0  # the job's metadata.generation this manifest is
    namespace: str = "default"


def runs_of(cluster: str, *, session: Session, unacknowledged: bool = False) -> dict[str, int]:
    """The runs this cluster should have, uid -> generation: every admitted binding, or only those
    its agent has not acknowledged yet (Dispatched)."""
    phases = [BindingPhase.Dispatched.value] if unacknowledged else _ADMITTED
    with cursor(session) as cur:
        cur.execute(
            "SELECT job_uid, generation FROM resource_bindings WHERE cluster = %(c)s AND phase = ANY(%(p)s)",
            {"c": cluster, "p": phases},
        )
        return {uid: int(gen) for uid, gen in cur.fetchall()}


def deliveries(cluster: str, uids: Sequence[str], *, session: Session) -> list[Delivery]:
    """What the Dispatch of each of these jobs carries, for those still admitted to ``cluster``
    (with the generation as it is now). The manifest goes out as the database prints it."""
    if not uids:
        return []
    with cursor(session) as cur:
        cur.execute(
            "SELECT b.job_uid, b.generation, CAST(j.manifest AS text), j.queue, j.priority, "
            "COALESCE(pc.preemption_policy, 'PreemptLowerPriority'), "
            f"{task_priorities('j')}, "
            "NULLIF(b.nominated, '[]'::jsonb), j.spec_generation, j.namespace "
            "FROM resource_bindings b JOIN jobs j ON j.uid = b.job_uid "
            "LEFT JOIN priority_classes pc ON pc.name = j.priority_class_name "
            "WHERE b.job_uid = ANY(string_to_array(%(u)s, ',')) AND b.cluster = %(c)s "
            "AND b.phase = ANY(%(p)s)",
            {"u": joined(uids), "c": cluster, "p": _ADMITTED},
        )
        rows = cur.fetchall()
        return [
            Delivery(r[0], int(r[1]), r[2], r[3], int(r[4]), r[5], r[6], r[7], int(r[8]), r[9]) for r in rows
        ]


def respecified(cluster: str, *, session: Session) -> dict[str, tuple[int, int]]:
    """The runs on this cluster whose job was applied anew since the cluster last said what it
    carries out: uid -> (binding generation, the job's spec generation)."""
    with cursor(session) as cur:
        cur.execute(
            "SELECT b.job_uid, b.generation, j.spec_generation FROM jobs j "
            "JOIN resource_bindings b ON b.job_uid = j.uid WHERE b.cluster = %(c)s AND b.phase = ANY(%(p)s) "
            # ix_jobs_respecified: only the jobs applied anew and not carried out yet are read
            "AND j.spec_generation > 1 AND j.spec_generation > j.observed_generation",
            {"c": cluster, "p": _ADMITTED},
        )
        return {uid: (int(gen), int(spec)) for uid, gen, spec in cur.fetchall()}


def add_evictions(evictions: Sequence[tuple[str, Sequence[str]]], *, session: Session) -> list[str]:
    """Pods of admitted runs their agents are to evict, as (job uid, pod uids); returns the jobs
    whose binding took them (a run that ended meanwhile takes none)."""
    out: list[str] = []
    for uid, pods in evictions:
        got = session.execute(
            sa.text(
                "UPDATE resource_bindings SET evictions = evictions || CAST(:pods AS jsonb), "
                "updated_at = now() WHERE job_uid = :uid AND phase = ANY(:admitted) RETURNING job_uid"
            ),
            {"uid": uid, "pods": json.dumps(list(pods)), "admitted": _ADMITTED},
        ).first()
        if got is not None:
            out.append(uid)
    return out


def evictions_of(cluster: str, *, session: Session) -> dict[str, tuple[int, list[str]]]:
    """Per admitted run on the cluster with pods to evict: its generation and those pod uids."""
    rows = session.execute(
        sa.text(
            "SELECT job_uid, generation, evictions FROM resource_bindings "
            "WHERE cluster = :cluster AND evictions <> '[]'::jsonb AND phase = ANY(:admitted)"
        ),
        {"cluster": cluster, "admitted": _ADMITTED},
    ).all()
    return {uid: (int(gen), list(pods)) for uid, gen, pods in rows}
