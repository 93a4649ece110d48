"""A HyperJob's phase, read from its children's (the HyperJob is not stored on its own).

- Aborted: a child was cancelled (Aborted or Aborting);
- Failed: a child failed;
- Completed: every child completed;
- Running: at least minAvailable children run (or are done);
- Pending: otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ChildState", "hyperjob_phase"]

_DONE = frozenset({"Completed"})
_ABORTED = frozenset({"Aborted", "Aborting", "Terminated", "Terminating"})
_FAILED = frozenset({"Failed"})
_RUNNING = frozenset({"Running", "Completing", "Restarting"})


@dataclass(frozen=True)
class ChildState:
    name: str
    cluster: str
    phase: str  # the child Job's phase
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


def hyperjob_phase(children: Sequence[ChildState], min_available: int) -> str:
    phases = [c.phase for c in children]
    if any(p in _ABORTED for p in phases):
        return "Aborted"
    if any(p in _FAILED for p in phases):
        return "Failed"
    if phases and all(p in _DONE for p in phases):
        return "Completed"
    if sum(p in _RUNNING or p in _DONE for p in phases) >= max(min_available, 1):
        return "Running"
    return "Pending"
