"""What the runs of one cluster report, written many at once: one statement per kind of write for
a whole batch of reports (the caller decides, under the row locks taken here, what each moves)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from vglobal.model.binding import BindingPhase, BindingRef
from vglobal.model.forms import (
    PodPlacement,
    TaskCounts,
    placements_from_json,
    placements_to_json,
    tasks_to_json,
)
from vglobal.store.engine import joined
from vglobal.store.repo.live import cursor


def lock_refs(uids: Sequence[str], *, session: Session) -> dict[str, BindingRef]:
    """Where these jobs' bindings stand, each row locked until the caller commits (in uid order,
    so two batches never wait on each other in a cycle); a job that is gone is missing."""
    if not uids:
        return {}
    with cursor(session) as cur:
        cur.execute(
            "SELECT job_uid, phase, cluster, generation FROM resource_bindings "
            "WHERE job_uid = ANY(string_to_array(%(u)s, ',')) ORDER BY job_uid FOR UPDATE",
            {"u": joined(sorted(set(uids)))},
        )
        return {r[0]: BindingRef.of(r[1], r[2], r[3]) for r in cur.fetchall()}


@dataclass(frozen=True, slots=True)
class JobReport:
    """The last status a current run reported of its job."""

    uid: str
    phase: str  # the Volcano job phase
    tasks: Sequence[TaskCounts]
    placements: Sequence[PodPlacement]
    retry_count: int
    finished: bool
    # The manifest generation the run carries out (status.observedGeneration; 0: not said).
    observed: int = 0


def update_statuses(reports: Sequence[JobReport], *, session: Session) -> None:
    """Each job's phase, task counts, pod placements and retries as reported, in one statement; a
    finished report stamps the job's finish time, and the generation it observed is kept (it
    never goes back) in the same row version rather than a second UPDATE of the row."""
    if not reports:
        return
    with cursor(session) as cur:
        cur.execute(
            "UPDATE jobs AS j SET phase = d.phase, tasks = CAST(d.tasks AS jsonb), "
            "placements = CAST(d.placements AS jsonb), retry_count = d.retry, updated_at = now(), "
            "finished_at = CASE WHEN d.fin THEN now() ELSE j.finished_at END, "
            "observed_generation = greatest(j.observed_generation, d.seen) "
            "FROM unnest(CAST(%(u)b AS text[]), CAST(%(p)b AS text[]), CAST(%(t)b AS text[]), "
            "CAST(%(pl)b AS text[]), CAST(%(r)b AS int[]), CAST(%(f)b AS bool[]), CAST(%(o)b AS bigint[])) "
            "AS d(uid, phase, tasks, placements, retry, fin, seen) WHERE j.uid = d.uid",
            {
                "u": [r.uid for r in reports],
                "p": [r.phase for r in reports],
                "t": [json.dumps(tasks_to_json(r.tasks)) for r in reports],
                "pl": [json.dumps(placements_to_json(r.placements)) for r in reports],
                "r": [r.retry_count for r in reports],
                "f": [r.finished for r in reports],
                "o": [r.observed for r in reports],
            },
        )


@dataclass(frozen=True, slots=True)
class Move:
    """A binding's move as one run (cluster, generation) made it, from the phase read under lock."""

    uid: str
    generation: int
    source: BindingPhase
    target: BindingPhase
    reason: str | None  # None: keep the binding's reason
    finished: bool


def move(moves: Sequence[Move], cluster: str, *, session: Session) -> list[tuple[str, str]]:
    """Every move in one statement, each only if the binding is still as the caller read it;
    returns (queue, phase) of each that moved to a finished phase (for the metrics)."""
    return [(q, phase) for _, q, phase in move_runs(moves, [cluster] * len(moves), session=session)]


def move_runs(
    moves: Sequence[Move], clusters: Sequence[str], *, session: Session
) -> list[tuple[str, str, str]]:
    """``move`` for runs of several clusters (each move's run on its cluster in ``clusters``) in
    one statement; returns (cluster, queue, phase) of each that moved to a finished phase."""
    if not moves:
        return []
    with cursor(session) as cur:
        cur.execute(
            "UPDATE resource_bindings AS b SET phase = d.target, updated_at = now(), "
            "reason = coalesce(d.reason, b.reason), "
            "reason_kind = CASE WHEN d.reason IS NULL THEN b.reason_kind ELSE '' END, "
            "finished_at = CASE WHEN d.fin THEN now() ELSE b.finished_at END "
            "FROM unnest(string_to_array(%(u)s, ','), CAST(%(g)b AS bigint[]), "
            "string_to_array(%(s)s, ','), string_to_array(%(t)s, ','), CAST(%(r)b AS text[]), "
            "CAST(%(f)b AS bool[]), string_to_array(%(c)s, ',')) "
            "AS d(uid, gen, source, target, reason, fin, cluster) "
            "WHERE b.job_uid = d.uid AND b.cluster = d.cluster AND b.generation = d.gen "
            "AND b.phase = d.source "
            # Only a finished move looks its job's queue up.
            "RETURNING CASE WHEN d.fin THEN (SELECT j.queue FROM jobs j WHERE j.uid = b.job_uid) END, "
            "b.phase, b.cluster",
            {
                "u": joined([m.uid for m in moves]),
                "g": [m.generation for m in moves],
                "s": ",".join(m.source.value for m in moves),
                "t": ",".join(m.target.value for m in moves),
                "r": [m.reason for m in moves],
                "f": [m.finished for m in moves],
                "c": joined(list(clusters)),
            },
        )
        return [(c, q, phase) for q, phase, c in cur.fetchall() if q is not None]


def checkpointed(
    times: Mapping[str, tuple[int, float]], cluster: str, *, session: Session
) -> list[tuple[str, datetime]]:
    """Each run's (uid -> (generation, epoch seconds)) last checkpoint, kept where it is later than
    the one kept, not before the run started, and the binding still names that run (cluster,
    generation); a time ahead of the database's clock is taken as now. Returns what was kept."""
    if not times:
        return []
    with cursor(session) as cur:
        cur.execute(
            "UPDATE resource_bindings AS b SET checkpointed_at = least(to_timestamp(d.t), now()) "
            "FROM unnest(string_to_array(%(u)s, ','), CAST(%(g)b AS bigint[]), CAST(%(t)b AS float8[])) "
            "AS d(uid, gen, t) "
            "WHERE b.job_uid = d.uid AND b.cluster = %(c)s AND b.generation = d.gen "
            "AND b.dispatched_at <= least(to_timestamp(d.t), now()) "
            "AND (b.checkpointed_at IS NULL OR b.checkpointed_at < least(to_timestamp(d.t), now())) "
            "RETURNING b.job_uid, b.checkpointed_at",
            {
                "u": joined(list(times)),
                "g": [g for g, _ in times.values()],
                "t": [t for _, t in times.values()],
                "c": cluster,
            },
        )
        return [(r[0], r[1]) for r in cur.fetchall()]


def placements_of(uids: Sequence[str], *, session: Session) -> dict[str, tuple[PodPlacement, ...]]:
    """The pods these jobs' rows hold, as last written."""
    if not uids:
        return {}
    with cursor(session) as cur:
        cur.execute(
            "SELECT uid, placements FROM jobs WHERE uid = ANY(string_to_array(%(u)s, ','))",
            {"u": joined(sorted(set(uids)))},
        )
        return {r[0]: placements_from_json(r[1]) for r in cur.fetchall()}
