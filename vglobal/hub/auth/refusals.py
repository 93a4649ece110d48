"""The hub's log of agents it refuses: one line per peer and reason per interval, however often
the agent retries, with how many refusals the interval held. The reason is the status message the
agent gets, which names what is wrong and never carries a credential."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import grpc

log = logging.getLogger(__name__)

INTERVAL = 60.0  # seconds between two lines about the same peer and reason
MAX_KEPT = 10_000  # (peer, reason) pairs remembered at most; older ones are forgotten first

_C = grpc.StatusCode
# Statuses that refuse an agent (its credentials, identity, or what it sent), not a fault here.
REFUSING = frozenset(
    {
        _C.UNAUTHENTICATED,
        _C.PERMISSION_DENIED,
        _C.ALREADY_EXISTS,
        _C.FAILED_PRECONDITION,
        _C.INVALID_ARGUMENT,
        _C.RESOURCE_EXHAUSTED,
    }
)


class RefusalLog:
    def __init__(self, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}  # -> (logged at, refused since)

    def refused(self, peer: str, code: grpc.StatusCode, reason: str) -> bool:
        """Note a refused agent; True when this one was logged."""
        if code not in REFUSING:
            return False
        key = (peer, f"{code.name}: {reason}")
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.interval:
                self._seen[key] = (seen[0], seen[1] + 1)
                return False
            self._seen.pop(key, None)
            if len(self._seen) >= MAX_KEPT:
                del self._seen[next(iter(self._seen))]  # the oldest logged
            self._seen[key] = (now, 0)
        more = f" ({seen[1]} more since the last line)" if seen is not None and seen[1] else ""
        log.warning("refused an agent from %s: %s%s", peer, key[1], more)
        return True
