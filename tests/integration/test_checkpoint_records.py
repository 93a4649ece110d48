"""A run's checkpoint as the hub keeps it (resource_bindings.checkpointed_at): the latest its agent
reports for the current run, one Checkpointed event per report that moves it, read into the
dispatcher's rows; an owner's declaration checked (nothing kept when refused); a new dispatch
starts without one; a reclaim's event names the checkpoint kept as the reclaim is written."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import partial

import pytest
import sqlalchemy as sa

from tests.integration.test_report_batches import events, record, seed, status
from tests.unit.admission.builders import res
from vglobal.admission import AdmissionPolicy, AdmissionResult, QueueSnap, Reclaim, RunningJob, Snapshot
from vglobal.admission.victims.worth import WORTH
from vglobal.hub import job_checkpoint
from vglobal.hub.dispatch.lost_work import lost_work
from vglobal.hub.errors import FailedPrecondition, InvalidArgument
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import live as live_repo


def _checkpointed(uid: str, gen: int, at: float) -> object:
    msg = status(uid, gen, "Running")
    msg.status.checkpointed_at = at  # type: ignore[attr-defined]
    return msg


def _kept(engine: sa.Engine, uid: str) -> float | None:
    with session_scope(make_sessionmaker(engine)) as session:
        (row,) = [b for b in live_repo.of_jobs([uid], session=session)]
    return row.checkpointed_at


def test_the_latest_checkpoint_of_the_current_run_is_kept_and_reset_by_a_new_dispatch(
    engine: sa.Engine,
) -> None:
    seed(engine, {"ck": "Running", "other": "Suspended"})
    started = time.time() - 600
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE resource_bindings SET dispatched_at = to_timestamp(:t)"), {"t": started})
    t1, t2 = started + 100, started + 200
    record(engine, [_checkpointed("ck", 1, t1), _checkpointed("ck", 1, t2)])  # type: ignore[list-item]
    assert _kept(engine, "ck") == pytest.approx(t2)
    assert events(engine, "ck").count("Checkpointed") == 1  # one per batch that moves it, not per report
    # the same or an older time, a stale run's, or one before the run started: nothing changes
    record(engine, [_checkpointed("ck", 1, t2), _checkpointed("ck", 1, t1)])  # type: ignore[list-item]
    record(engine, [_checkpointed("ck", 0, t2 + 50)])  # type: ignore[list-item]
    record(engine, [_checkpointed("other", 1, t2)])  # type: ignore[list-item]
    assert _kept(engine, "ck") == pytest.approx(t2) and _kept(engine, "other") is None
    assert events(engine, "ck").count("Checkpointed") == 1

    # an owner's declaration: checked, then kept as a report is
    factory = make_sessionmaker(engine)
    early = r"^at: .* before the job's current run started"
    with pytest.raises(InvalidArgument, match=early), session_scope(factory) as session:
        job_checkpoint.declare("ck", "default/ck", started - 1, principal="u", session=session)
    with pytest.raises(FailedPrecondition, match="does not run"), session_scope(factory) as session:
        job_checkpoint.declare("other", "default/other", None, principal="u", session=session)
    assert _kept(engine, "ck") == pytest.approx(t2)
    with session_scope(factory) as session:
        assert job_checkpoint.declare("ck", "default/ck", None, principal="u", session=session)
    assert _kept(engine, "ck") == pytest.approx(time.time(), abs=30)
    assert events(engine, "ck").count("Checkpointed") == 2

    # re-queued and dispatched again: the new run has saved nothing yet
    with session_scope(factory) as session:
        bindings_repo.requeue(["ck"], session=session, kind=WaitKind.Reclaimed, reason="reclaimed")
        _, written = bindings_repo.admit_written([("ck", "east")], session=session)
    assert [b.checkpointed_at for b in written.rows] == [None]
    assert _kept(engine, "ck") is None


def test_a_reclaim_names_the_checkpoint_kept_as_it_is_written_and_a_later_report_is_refused(
    engine: sa.Engine,
) -> None:
    seed(engine, {"ck": "Running"})
    started = time.time() - 600
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE resource_bindings SET dispatched_at = to_timestamp(:t)"), {"t": started})
    decided, reported = started + 100, started + 300
    # the cycle's snapshot held the checkpoint at +100; the agent reported +300 while it decided
    record(engine, [_checkpointed("ck", 1, reported)])  # type: ignore[list-item]
    victim = RunningJob(
        "ck", "a", "east", 0, started, res(gpu=8), {"east-0": res(gpu=8)},
        running_since=started, checkpointed=decided,
    )
    snapshot = Snapshot(
        now=started + 400, queues=(QueueSnap("a"),), clusters=(), pending=(), running=(victim,),
        policy=AdmissionPolicy(reclaim_rule=WORTH),
    )
    result = AdmissionResult({}, (Reclaim("ck", "east", "b0", "for b0"),), {}, ())
    assert "checkpoint at" in lost_work(snapshot, result)["ck"]  # without a read: the snapshot's
    factory = make_sessionmaker(engine)
    written_at = started + 420
    with session_scope(factory) as session:
        read = partial(bindings_repo.checkpoints_locked, session=session)
        said = lost_work(snapshot, result, read, written_at)["ck"]
        bindings_repo.requeue(["ck"], session=session, kind=WaitKind.Reclaimed, reason="reclaimed")
    at = datetime.fromtimestamp(reported, UTC).isoformat(timespec="seconds")
    assert said == f"; it loses 120 s of work, since its checkpoint at {at}", said
    # a report of the stopped run after the reclaim is not kept: the named checkpoint stays the last
    before = events(engine, "ck").count("Checkpointed")
    record(engine, [_checkpointed("ck", 1, reported + 50)])  # type: ignore[list-item]
    assert _kept(engine, "ck") == pytest.approx(reported)
    assert events(engine, "ck").count("Checkpointed") == before
