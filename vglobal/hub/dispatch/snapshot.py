"""Reading one admission Snapshot out of Postgres (inside the dispatch cycle's transaction).

A job's requests, gang and placement never change after submit, so the dispatcher keeps them
between cycles; of the bindings and the clusters it keeps the last read too, and each cycle reads
only the rows written since (``JobCache.refresh``, ``ClusterCache.read``).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.orm import Session

from vglobal.admission import PendingByQueue, QueueSnap, Snapshot
from vglobal.admission.inputs import claims_of
from vglobal.config import HubSettings
from vglobal.hub.dispatch.cache import JobCache
from vglobal.hub.dispatch.clusters import ClusterCache
from vglobal.hub.dispatch.fair_usage import FairUsage
from vglobal.hub.dispatch.heap import kept_heap
from vglobal.hub.dispatch.spend import BudgetView, SpendLedger
from vglobal.model.queue_affinity import affinity_from_manifest, limit_vectors
from vglobal.model.queue_tuning import queue_half_lives
from vglobal.model.resources import EMPTY, ResourceVector
from vglobal.store.repo import claims as claims_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import queues as queues_repo


def _opt(units: dict[str, Any] | None) -> ResourceVector | None:
    return None if units is None else ResourceVector(units)


@dataclass
class SnapshotReader:
    """What the dispatcher keeps between cycles to read each one's snapshot."""

    jobs: JobCache = field(default_factory=JobCache)
    clusters: ClusterCache = field(default_factory=ClusterCache)
    # Per queue, the figures stored with it when the last snapshot was read.
    queue_status: dict[str, dict[str, Any]] = field(default_factory=dict)
    fair: FairUsage | None = None  # made on the first read, from the settings
    # The claims on freed room as stored when the last snapshot was read (a small table, read each
    # cycle so a new leader continues them).
    claim_rows: list[dict[str, Any]] = field(default_factory=list)
    spend: SpendLedger = field(default_factory=SpendLedger)  # GPU-hours budgets are charged from it
    budgets: BudgetView = field(default_factory=BudgetView)  # the last read's

    def fair_usage(self, settings: HubSettings) -> FairUsage:
        if self.fair is None:
            self.fair = FairUsage(settings.fair_share_half_life, settings.reclaim_interval)
        return self.fair

    def read(self, settings: HubSettings, *, session: Session) -> Snapshot:
        # A new leader's first read builds what it keeps of every job, node and queue at once
        # (heap.py); later full reads of the jobs pause the collector only (JobCache.refresh).
        with kept_heap() if self.jobs.horizon is None else nullcontext():
            return self._read(settings, session=session)

    def _read(self, settings: HubSettings, *, session: Session) -> Snapshot:
        jobs = self.jobs
        now = clusters_repo.db_now(session=session)
        jobs.refresh(now, session=session)
        queue_rows = queues_repo.list_queues(session=session)
        self.claim_rows = claims_repo.load(session=session)
        self.queue_status = {q.name: q.status for q in queue_rows}
        fair = self.fair_usage(settings)
        held = {q.name: jobs.allocated(q.name) for q in queue_rows}
        notes = {q.name: (q.parent, q.annotations) for q in queue_rows}
        lives = queue_half_lives(notes)
        fair.charge(now, held, lives, session=session)
        reclaimed = fair.reclaimed(now) if settings.reclaim_limit > 0 else {}
        self.spend.charge(now, held, session=session)
        budgets = self.budgets = self.spend.view(notes, now)
        queues = tuple(
            QueueSnap(
                name=q.name,
                parent=q.parent or "root",
                weight=q.weight,
                priority=q.priority,
                capability=_opt(q.capability),
                deserved=_opt(q.deserved),
                guarantee=ResourceVector(q.guarantee),
                reclaimable=q.reclaimable,
                open=q.state == "Open",
                allocated=jobs.allocated(q.name),
                running=jobs.running_of(q.name),
                created=int(q.created_at.timestamp()),
                usage=fair.usage(q.name),
                reclaimed=reclaimed.get(q.name, EMPTY),
                affinity=affinity_from_manifest(q.manifest),
                node_group_limits=limit_vectors(notes[q.name][1]),
                over_budget=budgets.over.get(q.name, ""),
                near_budget=q.name in budgets.near,
                half_life=lives.get(q.name),
            )
            for q in queue_rows
        )
        clusters = tuple(
            self.clusters.snap(c, tuple(jobs.unplaced.get(c.name, {}).values()), jobs.unplaced_cards(c.name))
            for c in self.clusters.read(session=session)
        )
        return Snapshot(
            now=now,
            queues=queues,
            clusters=clusters,
            pending=_near_budget(jobs.pending_by_queue(), budgets.near),
            running=tuple(jobs.running.values()),
            policy=settings.admission_policy(),
            claims=claims_of(self.claim_rows),
        )


def _near_budget(pending: PendingByQueue, near: set[str]) -> PendingByQueue:
    """Jobs of a queue near its GPU-hour budget take only free room: no victims."""
    if not near:
        return pending
    return PendingByQueue(
        {
            queue: tuple(replace(p, preemption_policy="Never") for p in jobs) if queue in near else jobs
            for queue, jobs in pending.by_queue.items()
        }
    )
