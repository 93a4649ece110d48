"""Fair share over time: per-queue usage in resource-seconds, decayed with a half-life.

Usage follows ``u(t + Δt) = u(t)·2^(-Δt/H) + a·∫₀^Δt 2^(-s/H) ds`` for an allocation ``a`` held over
the interval (the exact integral of Volcano's and Slurm's "charge a·Δt, then decay"), so a queue
that held ``a`` forever settles at ``a·H/ln 2``: ``usage·ln 2/H`` is the queue's *decayed
allocation*, in the allocation's own units, which admission orders by against the deserved share.
Nothing here reads a clock: the caller passes the times (the hub its database's clock, the
simulator its virtual one), and a time earlier than the last one (a clock that went back, a new
leader whose clock is behind) charges and decays nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

LN2 = math.log(2.0)
# Usage below this many resource-seconds (canonical units) is dropped, as Volcano drops < 0.01.
_NEGLIGIBLE = 1e-3

Usage = dict[str, float]  # resource -> decayed resource-seconds (canonical units x seconds)


def decay_factor(elapsed: float, half_life: float) -> float:
    """``2^(-elapsed/H)``; 1 when no time passed (or it went back) or there is no half-life."""
    if half_life <= 0 or elapsed <= 0:
        return 1.0
    return float(2.0 ** (-elapsed / half_life))


def accrue(usage: Mapping[str, float], held: Mapping[str, int], elapsed: float, half_life: float) -> Usage:
    """Usage after ``elapsed`` seconds of holding ``held``: the old usage decays, the new charge
    decays from the moment it was used. ``elapsed`` ≤ 0 changes nothing."""
    if half_life <= 0 or elapsed <= 0:
        return dict(usage)
    factor = decay_factor(elapsed, half_life)
    gain = half_life / LN2 * (1.0 - factor)  # ∫₀^Δt 2^(-s/H) ds
    out = {r: u * factor for r, u in usage.items()}
    for r, a in held.items():
        if a > 0:
            out[r] = out.get(r, 0.0) + a * gain
    return {r: u for r, u in out.items() if u >= _NEGLIGIBLE}


def decayed_allocation(usage: Mapping[str, float], half_life: float) -> dict[str, float]:
    """The allocation that, held forever, leaves this usage: ``usage·ln 2/H`` (0 with no half-life)."""
    if half_life <= 0:
        return {}
    return {r: u * LN2 / half_life for r, u in usage.items()}


def dominant_share(usage: Mapping[str, float], deserved: Mapping[str, int], half_life: float) -> float:
    """Max over resources of decayed allocation / deserved (a resource deserved none of is left out)."""
    alloc = decayed_allocation(usage, half_life)
    return max((a / deserved[r] for r, a in alloc.items() if deserved.get(r, 0) > 0), default=0.0)


@dataclass
class UsageLedger:
    """Every queue's decayed usage as of ``at`` (None = nothing charged yet)."""

    half_life: float
    usage: dict[str, Usage] = field(default_factory=dict)
    at: float | None = None
    # Queues with a half-life of their own (vglobal.io/fair-share-half-life, inherited): theirs.
    half_lives: dict[str, float] = field(default_factory=dict)

    def resume(self, stored: Mapping[str, Usage], at: float | None) -> None:
        """Continue from usage stored at time ``at`` (by this leader or a previous one)."""
        self.usage = {q: dict(u) for q, u in stored.items()}
        self.at = at

    def advance(self, now: float, held: Mapping[str, Mapping[str, int]]) -> None:
        """Charge each queue's allocation ``held`` since the last call, decaying what it had."""
        if self.at is None:
            self.at = now
            return
        elapsed = now - self.at
        if elapsed <= 0:
            return  # the clock went back (or stood still): nothing to charge, keep the later time
        queues = set(self.usage) | {q for q, a in held.items() if a}
        empty: dict[str, int] = {}
        life, usage = self.half_lives, self.usage
        updated = {
            q: accrue(usage.get(q, {}), held.get(q, empty), elapsed, life.get(q, self.half_life))
            for q in queues
        }
        self.usage = {q: u for q, u in updated.items() if u}
        self.at = now

    def of(self, queue: str) -> Usage:
        return self.usage.get(queue, {})
