"""A client-side token bucket, as client-go's ``--kube-api-qps`` / ``--kube-api-burst``.

Every request the agent sends takes one token; tokens come back at ``qps`` per second up to
``burst``. A ``qps`` of 0 or less means no limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def _reserve(self) -> float:
        """Take a token (possibly on credit) and return how long to wait for it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> None:
        """Block until this request may go."""
        if self.unlimited:
            return
        wait = self._reserve()
        if wait > 0:
            self._sleep(wait)
