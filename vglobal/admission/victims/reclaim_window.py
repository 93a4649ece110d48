"""What reclaim took from each queue lately: the input of the reclaim rate limit.

The dispatcher (hub or simulator) notes every victim it stops; a snapshot gets, per queue, the sum
of those within the last ``interval`` seconds (QueueSnap.reclaimed). Times come from the caller.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from vglobal.model.resources import EMPTY, ResourceVector


@dataclass
class RecentReclaims:
    interval: float
    _log: deque[tuple[float, str, ResourceVector]] = field(default_factory=deque)

    def add(self, queue: str, request: ResourceVector, now: float) -> None:
        self._log.append((now, queue, request))

    def _expire(self, now: float) -> None:
        log = self._log
        while log and log[0][0] + self.interval <= now:
            log.popleft()

    def by_queue(self, now: float) -> dict[str, ResourceVector]:
        self._expire(now)
        out: dict[str, ResourceVector] = {}
        for _, q, req in self._log:
            out[q] = out.get(q, EMPTY) + req
        return out

    def expiries(self) -> list[float]:
        """When each noted reclaim leaves the window (the limit may then allow another)."""
        return [t + self.interval for t, _, _ in self._log]
