"""Clocks: real time for the agent daemon, virtual time for ``vglobal sim run`` and tests."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds (epoch for the real clock, from 0 for a virtual one)."""
        ...


class RealClock:
    def now(self) -> float:
        return time.time()


class VirtualClock:
    """Time moves only when the driver says so, so a simulation is reproducible and instant."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, when: float) -> None:
        if when < self._now:
            raise ValueError(f"virtual time cannot go back from {self._now} to {when}")
        self._now = when

    def advance(self, seconds: float) -> None:
        self.advance_to(self._now + seconds)
