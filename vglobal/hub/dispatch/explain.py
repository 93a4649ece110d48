"""What explains a cycle's decisions: each admission's Dispatched event, why the other jobs wait,
the queues' figures. Worked out from what changed since it was last written, and written in a
transaction of its own after the admissions (by ``Explainer``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from itertools import islice
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from vglobal.admission import AdmissionResult, Wait
from vglobal.hub.dispatch.cache import WrittenReason
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.live import Written

log = logging.getLogger(__name__)

# A wait reason whose kind is unchanged but whose figures moved (what a cluster can hold, how much
# a queue has) is rewritten at most this often: in a busy system most figures move every cycle,
# and rewriting tens of thousands of rows each second would cost more than the cycle itself.
REASON_REFRESH = 30.0
# At most this many such refreshes per cycle: reasons first written together fall due together,
# and rewriting them all in one cycle would make that cycle slow. The rest follow next cycle.
REFRESH_PER_CYCLE = 2000
# At most this many reasons are written per cycle in all (new kinds and first ones before any
# refresh): 100k jobs submitted at once would otherwise make their first cycle write 100k rows,
# about a second. The rest follow in the next cycles; until then a job shows the reason last
# written, or that the dispatcher has not looked at it yet.
REASONS_PER_CYCLE = 5_000
_SCAN_CHUNK = 8192  # decisions compared with what was written per step (see changed_waits)

Reason = tuple[str, WaitKind, str]  # (uid, kind, sentence)


class Noted(Protocol):
    """What ``changed_waits`` needs of a job: the reason last written for it, if any."""

    @property
    def reason(self) -> WrittenReason | None: ...


def changed_waits(result: AdmissionResult, jobs: Mapping[str, Noted], now: float) -> list[Reason]:
    """Why each job waits, where that differs from what this process last wrote for it: a new
    kind of reason at once, the same kind with new figures after REASON_REFRESH seconds
    (REFRESH_PER_CYCLE of them at most); REASONS_PER_CYCLE in all, new kinds first."""
    get = jobs.get
    out: list[Reason] = []
    refreshed: list[Reason] = []
    stale = now - REASON_REFRESH
    items = iter(result.decisions.items())
    while len(out) < REASONS_PER_CYCLE:  # once the cycle's budget is new kinds, the rest can wait
        # The unchanged (almost all of them) are left out by a comprehension: a loop costs 3x
        # more. A chunk at a time, so that a burst of first reasons stops the scan early.
        chunk = list(islice(items, _SCAN_CHUNK))
        if not chunk:
            break
        # A sentence names its kind (each kind words its own), so the sentences alone are compared.
        moved = [
            (uid, d, w)
            for uid, d in chunk
            if type(d) is Wait
            and (job := get(uid)) is not None
            and ((w := job.reason) is None or w.text != d.reason)
        ]
        for uid, d, was in moved:
            if was is not None and was.kind is d.kind:
                if was.at <= stale and len(refreshed) < REFRESH_PER_CYCLE:
                    refreshed.append((uid, d.kind, d.reason))
            elif len(out) < REASONS_PER_CYCLE:
                out.append((uid, d.kind, d.reason))
    return out + refreshed[: REASONS_PER_CYCLE - len(out)]


def changed_statuses(
    result: AdmissionResult,
    stored: dict[str, dict[str, Any]],
    held: Mapping[str, Mapping[str, Mapping[str, int]]],
    budgets: Mapping[str, dict[str, Any]] | None = None,
    rooms: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The queues' figures (deserved, realCap, what they hold per cluster: ``held``; a capped
    queue's room beyond gangs per cluster: ``rooms``, held.queue_rooms) where they differ from
    those stored with the queue when the snapshot was read: most queues' figures hold from one
    cycle to the next."""
    out = {}
    for name, q in result.queues.items():
        status: dict[str, Any] = {
            "deserved": dict(q.deserved.items()),
            "capability": None if q.real_capability is None else dict(q.real_capability.items()),
        }
        if held.get(name):
            status["clusters"] = {c: dict(u) for c, u in sorted(held[name].items())}
        if budgets and name in budgets:
            status["budget"] = budgets[name]
        if rooms and name in rooms:
            status.update(rooms[name])
        if stored.get(name) != status:
            out[name] = status
    return out


def _explain(
    sessions: sessionmaker[Session],
    done: list[tuple[str, str, int]],
    waits: list[Reason],
    statuses: dict[str, dict[str, Any]],
) -> tuple[Written, float]:
    """One cycle's explanation in one transaction. Returns the bindings as it wrote them (its only
    binding write) and how long it took."""
    started = time.perf_counter()
    with session_scope(sessions) as session:
        bindings_repo.log_dispatched(done, session=session)
        written = bindings_repo.set_reasons(waits, session=session)
        queues_repo.set_statuses(statuses, session=session)
    return written, time.perf_counter() - started


class ExplanationFailed(Exception):
    """Writing a cycle's explanation failed: its Dispatched events and the wait reasons of
    ``uids`` were not written."""

    def __init__(self, uids: list[str]) -> None:
        super().__init__(f"the explanation of {len(uids)} wait reasons was not written")
        self.uids = uids


class Explainer:
    """Writes each cycle's explanation after its admissions have committed.

    In the background (the hub's way) it runs on a thread of its own while the next cycle reads
    and decides: it is mostly Postgres's work, which then overlaps the cycle's Python. The next
    cycle takes it in once its own admissions are durable. Inline (``background=False``), it is
    written before ``write`` returns. Either way a failure comes out as ``ExplanationFailed``.
    """

    def __init__(self, *, background: bool) -> None:
        self.background = background
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="explain") if background else None
        self._pending: Future[tuple[Written, float]] | None = None
        self._uids: list[str] = []  # whose reasons the explanation in flight writes
        self._now = 0.0  # the clock of the snapshot the explanation in flight explains
        self.seconds = 0.0  # how long the last explanation taken in took to write

    def write(
        self,
        sessions: sessionmaker[Session],
        done: list[tuple[str, str, int]],
        waits: list[Reason],
        statuses: dict[str, dict[str, Any]],
        now: float,
    ) -> None:
        assert self._pending is None, "the previous explanation was not taken in"
        job = partial(_explain, sessions, done, waits, statuses)
        self._now = now
        self._uids = [uid for uid, _, _ in waits]
        if self._pool is not None:
            self._pending = self._pool.submit(job)
            return
        try:
            written = job()
        except Exception as exc:  # nothing is left pending: the caller sees it at once
            raise ExplanationFailed(self._uids) from exc
        self._pending = Future()
        self._pending.set_result(written)

    def committed(self) -> bool:
        """Whether an explanation is waiting to be taken in, already committed."""
        return self._pending is not None and self._pending.done()

    def take(self) -> tuple[Written, float] | None:
        """The last explanation's bindings as written and the clock of the snapshot it explains,
        once it has committed (None if there is none); ``ExplanationFailed`` if it failed."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        try:
            written, self.seconds = pending.result()
        except Exception as exc:
            raise ExplanationFailed(self._uids) from exc
        return written, self._now

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
