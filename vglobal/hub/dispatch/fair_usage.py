"""The leader's side of fair share over time and of the reclaim rate limit.

Each cycle charges every queue what it holds since the last cycle (admission/share/usage.py, on the
database's clock, so replicas agree on time) and every few seconds upserts all queues' usage in
one statement inside the cycle's transaction, so only the leader of the moment writes it. A new
leader (or this one after losing the lead) starts from the stored rows and charges what runs from
their time on. What reclaim took lately (the rate limit's input) is kept in memory only: a new
leader starts with a full allowance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from vglobal.admission import ROOT, AdmissionResult, Snapshot
from vglobal.admission.share.usage import Usage, UsageLedger
from vglobal.admission.victims.reclaim_window import RecentReclaims
from vglobal.model.records import StoredUsage
from vglobal.model.resources import ResourceVector
from vglobal.store.repo import queue_usage as queue_usage_repo

STORE_EVERY = 5.0  # seconds of database time between two upserts of the usage


@dataclass
class FairUsage:
    half_life: float
    reclaim_interval: float
    ledger: UsageLedger | None = None  # None until the stored usage is read
    recent: RecentReclaims = field(init=False)
    stored_at: float | None = None

    def __post_init__(self) -> None:
        self.recent = RecentReclaims(self.reclaim_interval)

    def charge(
        self,
        now: float,
        held: Mapping[str, Mapping[str, int]],
        half_lives: Mapping[str, float] | None = None,
        *,
        session: Session,
    ) -> None:
        """Every queue's usage up to ``now``, given what each holds (read from the stored rows first);
        `half_lives`: queues with a half-life of their own (vglobal.io/fair-share-half-life)."""
        if self.half_life <= 0 and not half_lives:
            return
        if self.ledger is None:
            stored = queue_usage_repo.load(session=session)
            self.ledger = UsageLedger(self.half_life)
            at = max((s.at for s in stored.values()), default=None)
            self.ledger.resume({q: s.usage for q, s in stored.items()}, at)
        self.ledger.half_lives = dict(half_lives or {})
        self.ledger.advance(now, held)

    def usage(self, queue: str) -> Usage:
        return self.ledger.of(queue) if self.ledger is not None else {}

    def reclaimed(self, now: float) -> dict[str, ResourceVector]:
        return self.recent.by_queue(now)

    def note(self, snapshot: Snapshot, result: AdmissionResult, *, session: Session) -> None:
        """After a cycle's decisions are written (same transaction): its reclaims count against the
        rate limit, and the usage is stored if it is due."""
        if result.reclaims:
            running = {r.uid: r for r in snapshot.running}
            for r in result.reclaims:
                victim = running.get(r.victim_uid)
                if victim is not None:
                    self.recent.add(victim.queue, victim.request, snapshot.now)
        ledger, now = self.ledger, snapshot.now
        if ledger is None or (self.stored_at is not None and 0 <= now - self.stored_at < STORE_EVERY):
            return
        rows = [
            StoredUsage(name, ledger.of(name), dict(q.usage), q.usage_share, now)
            for name, q in result.queues.items()
            if name != ROOT
        ]
        queue_usage_repo.store(rows, session=session)
        self.stored_at = now
