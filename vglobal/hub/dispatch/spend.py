"""The spend ledger: GPU-seconds each queue's jobs hold, charged at every dispatch cycle (what the
queue is allocated, times the time since the last cycle), kept per UTC day and stored once a minute
in the cycle's transaction, so a new leader goes on from what the last one stored (it loses at most
a minute of charges). Budgets (model/queue_budget.py) are read against it over whole days."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from vglobal.model.queue_budget import GPU, budget_of
from vglobal.model.resources import ResourceVector
from vglobal.store.repo import queue_spend as spend_repo

DAY = 86400.0
STORE_EVERY = 60.0
KEEP_DAYS = 400  # days of spend kept: more than any budget period in use


def day_of(t: float) -> int:
    return int(t // DAY)


@dataclass
class BudgetView:
    """The cycle's reading of every budgeted queue."""

    over: dict[str, str] = field(default_factory=dict)  # queue -> why its jobs wait
    near: set[str] = field(default_factory=set)  # queues (and their subtrees) near or over
    status: dict[str, dict[str, Any]] = field(default_factory=dict)  # for each budgeted queue


@dataclass
class SpendLedger:
    at: float | None = None
    stored: dict[str, dict[int, float]] | None = None  # what is in the table, per queue and day
    unstored: dict[tuple[str, int], float] = field(default_factory=dict)
    stored_at: float | None = None

    def charge(self, now: float, held: Mapping[str, ResourceVector], *, session: Session) -> None:
        if self.stored is None:
            self.stored = spend_repo.since(day_of(now) - KEEP_DAYS, session=session)
            self.stored_at = now  # the gap before this leader was the last one's to charge
        elif self.at is not None and now > self.at:
            dt, today = now - self.at, day_of(now)
            for queue, vec in held.items():
                gpus = vec.get(GPU, 0) / 1000
                if gpus > 0:
                    key = (queue, today)
                    self.unstored[key] = self.unstored.get(key, 0.0) + gpus * dt
        self.at = now
        if self.stored_at is None or now - self.stored_at >= STORE_EVERY:
            self.store(now, session=session)

    def store(self, now: float, *, session: Session) -> None:
        assert self.stored is not None
        spend_repo.add(self.unstored, session=session)
        for (queue, day), secs in self.unstored.items():
            days = self.stored.setdefault(queue, {})
            days[day] = days.get(day, 0.0) + secs
        self.unstored = {}
        if self.stored_at is None or day_of(now) != day_of(self.stored_at):
            spend_repo.prune(day_of(now) - KEEP_DAYS, session=session)
        self.stored_at = now

    def hours(self, queues: set[str], period: float, now: float) -> float:
        """GPU-hours the queues spent over the whole days the period covers (today included)."""
        first = day_of(now) - max(1, math.ceil(period / DAY)) + 1
        stored = self.stored or {}
        secs = sum(s for q in queues for d, s in stored.get(q, {}).items() if d >= first)
        secs += sum(s for (q, d), s in self.unstored.items() if q in queues and d >= first)
        return secs / 3600

    def view(self, queues: Mapping[str, tuple[str | None, Mapping[str, str]]], now: float) -> BudgetView:
        """``queues``: name -> (parent, annotations). A budget covers its queue's subtree."""
        out = BudgetView()
        budgets = {q: b for q, (_, notes) in queues.items() if (b := budget_of(notes)) is not None}
        if not budgets:
            return out
        children: dict[str, list[str]] = {}
        for q, (parent, _) in queues.items():
            children.setdefault(parent or "root", []).append(q)
        for q, budget in sorted(budgets.items()):
            subtree = _subtree(q, children)
            spent = self.hours(subtree, budget.period, now)
            near, over = budget.state(q, spent)
            out.status[q] = {
                "gpuHours": budget.gpu_hours,
                "spentGpuHours": round(spent, 3),
                "periodSeconds": budget.period,
            }
            if near or over:
                out.near |= subtree
            if over:
                for member in subtree:
                    out.over.setdefault(member, over)
        return out


def _subtree(root: str, children: Mapping[str, list[str]]) -> set[str]:
    out, todo = set(), [root]
    while todo:
        q = todo.pop()
        if q not in out:
            out.add(q)
            todo.extend(children.get(q, ()))
    return out
