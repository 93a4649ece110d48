"""Waiting in integration tests: poll a condition until it holds, or fail saying what was awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait(cond: Callable[[], T], timeout: float = 10.0, what: str = "the condition") -> T:
    """The first truthy value of ``cond()``, polled every 0.1 s."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)
