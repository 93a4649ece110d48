"""A checkpoint declared by a job's owner (CheckpointJob): kept on the binding of its current run
as an agent's report is, so a reclaim of the run loses only the work since (the worth rule)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from vglobal.hub.errors import FailedPrecondition, InvalidArgument
from vglobal.model.binding import ADMITTED, BindingPhase
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import runs as runs_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.live import cursor

SKEW = 5.0  # seconds a caller's clock may run ahead of the database's: such a time is taken as now


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def declare(uid: str, label: str, at: float | None, *, principal: str, session: Session) -> bool:
    """Keep ``at`` (epoch seconds; None: now) as the job's last checkpoint; False when a later one
    is kept already (nothing changes). The job must run: a time in the future or before its run
    started is refused naming ``at``."""
    with cursor(session) as cur:
        cur.execute(
            "SELECT phase, cluster, generation, CAST(extract(epoch FROM dispatched_at) AS float8), "
            "CAST(extract(epoch FROM now()) AS float8) FROM resource_bindings WHERE job_uid = %(u)s "
            "FOR UPDATE",
            {"u": uid},
        )
        row = cur.fetchone()
    if row is None or BindingPhase(row[0]) not in ADMITTED or not row[1] or row[3] is None:
        phase = BindingPhase(row[0]).value if row is not None else "gone"
        raise FailedPrecondition(
            f"job {label} does not run (binding {phase}): only a running job declares a checkpoint"
        )
    cluster, generation, started, now = str(row[1]), int(row[2]), float(row[3]), float(row[4])
    if at is None:
        at = now
    if at > now + SKEW:
        raise InvalidArgument(f"at: {_iso(at)} is in the future (now {_iso(now)})")
    if at < started:
        raise InvalidArgument(f"at: {_iso(at)} is before the job's current run started ({_iso(started)})")
    kept = runs_repo.checkpointed({uid: (generation, min(at, now))}, cluster, session=session)
    if kept:
        said = f"checkpoint at {_iso(min(at, now))} declared by {principal}"
        event = NewEvent("Checkpointed", said, job_uid=uid, cluster=cluster, principal=principal)
        events_repo.add_events([event], session=session)
    return bool(kept)
