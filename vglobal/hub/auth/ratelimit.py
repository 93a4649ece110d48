"""Per-principal token buckets: ``rate`` calls a second on average, bursts of up to ``burst``."""

from __future__ import annotations

import threading
from dataclasses import dataclass

# Buckets are forgotten once full (idle) when there are more than this many.
MAX_BUCKETS = 10_000


@dataclass
class Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """Thread-safe; the caller passes the time (a monotonic clock), so tests need no sleeping."""

    def __init__(self, rate: float, burst: int) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, Bucket] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str, now: float) -> float:
        """Take one call from ``key``'s bucket: 0.0 if allowed, else how many seconds until it would be."""
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._forget_idle(now)
                bucket = self._buckets[key] = Bucket(self.burst, now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        refill = self.burst / self.rate
        idle = [k for k, b in self._buckets.items() if now - b.stamp >= refill]
        for k in idle:
            del self._buckets[k]
        if len(self._buckets) >= MAX_BUCKETS:
            # Still full of busy callers: drop the least recently seen half.
            by_age = sorted(self._buckets, key=lambda k: self._buckets[k].stamp)
            for k in by_age[: len(by_age) // 2]:
                del self._buckets[k]
