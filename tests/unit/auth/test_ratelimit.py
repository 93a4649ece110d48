"""Per-principal token buckets, driven by a clock the test owns."""

from __future__ import annotations

import pytest

from vglobal.hub.auth import ratelimit
from vglobal.hub.auth.ratelimit import RateLimiter


def test_a_burst_then_the_steady_rate() -> None:
    limiter = RateLimiter(rate=10, burst=5)
    assert [limiter.acquire("a", 0.0) for _ in range(5)] == [0.0] * 5
    wait = limiter.acquire("a", 0.0)
    assert wait == pytest.approx(0.1)
    assert limiter.acquire("a", 0.05) == pytest.approx(0.05)  # refused calls take nothing
    assert limiter.acquire("a", 0.1) == 0.0
    assert limiter.acquire("a", 0.1) > 0


def test_principals_have_buckets_of_their_own() -> None:
    limiter = RateLimiter(rate=1, burst=1)
    assert limiter.acquire("a", 0.0) == 0.0
    assert limiter.acquire("a", 0.0) > 0
    assert limiter.acquire("b", 0.0) == 0.0


def test_memory_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "MAX_BUCKETS", 100)
    limiter = RateLimiter(rate=1, burst=1)
    for i in range(1000):
        limiter.acquire(f"caller-{i}", float(i) / 1000)
    assert len(limiter._buckets) <= 100


def test_nonsense_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        RateLimiter(rate=0, burst=1)
