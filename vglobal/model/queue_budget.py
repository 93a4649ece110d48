"""A queue's GPU-hour budget over a period: ``vglobal.io/gpu-hours-budget: "10000"`` and
``vglobal.io/budget-period: 720h`` (default 30 days) on the Queue.

Charged from what the queue's jobs hold, hour by hour (the hub's spend ledger). Near the budget (90 %
spent) its jobs are admitted only into room that is free (they take no victims); over it they wait,
the reason naming the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems, key_path

BUDGET_ANNOTATION = "vglobal.io/gpu-hours-budget"
PERIOD_ANNOTATION = "vglobal.io/budget-period"
DEFAULT_PERIOD = 30 * 86400.0
NEAR = 0.9  # of the budget spent: its jobs take no victims any more
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Budget:
    gpu_hours: float
    period: float = DEFAULT_PERIOD  # seconds

    def state(self, queue: str, spent_hours: float) -> tuple[bool, str]:
        """(near, the reason its jobs wait when over: "" when not over)."""
        span = period_text(self.period)
        if spent_hours >= self.gpu_hours:
            return True, (
                f"queue {queue} spent {hours_text(spent_hours)} of its {hours_text(self.gpu_hours)} "
                f"GPU-hour budget over the last {span}"
            )
        return spent_hours >= NEAR * self.gpu_hours, ""


def budget_of(annotations: Mapping[str, str], p: Problems | None = None) -> Budget | None:
    """The queue's budget, None without one; bad values are added to ``p`` naming the annotation."""
    text = annotations.get(BUDGET_ANNOTATION)
    if text is None or not str(text).strip():
        return None
    problems = p if p is not None else Problems()
    try:
        hours = float(text)
    except ValueError:
        hours = -1.0
    if not 0 < hours < float("inf"):
        where = key_path("metadata.annotations", BUDGET_ANNOTATION)
        problems.add(where, f'expected GPU-hours above 0, not "{text}"')
        return None
    period = DEFAULT_PERIOD
    raw = annotations.get(PERIOD_ANNOTATION)
    if raw:
        try:
            period = parse_duration(raw)
        except ValueError as exc:
            problems.add(key_path("metadata.annotations", PERIOD_ANNOTATION), str(exc))
            return None
        if period < 3600:
            problems.add(key_path("metadata.annotations", PERIOD_ANNOTATION), "must be at least 1h")
            return None
    return Budget(hours, period)


def hours_text(hours: float) -> str:
    return f"{hours:,.0f}" if hours >= 100 else f"{hours:.3g}"


def period_text(seconds: float) -> str:
    days, hours = seconds / 86400, seconds / 3600
    if days >= 1 and days == int(days):
        return "1 day" if days == 1 else f"{days:g} days"
    return "1 hour" if hours == 1 else f"{hours:g} hours"

