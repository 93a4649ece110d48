"""Where a followed log stream stands, so that a new call after a break (a hub restart, the agent
reconnecting) neither repeats nor loses a line.

A followed stream is read with timestamps whatever the caller asked: each pod's last line time,
and how many lines it had at that very time, are kept. The call after a break asks for the lines
since the earliest of those times (the pods' streams are one call) and drops, pod by pod, the
lines older than the pod's last one and the ones at its time it already had.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

import grpc

from vglobal.api.v1 import jobs_pb2

RESUME_FOR = 120.0  # seconds a broken stream keeps trying before the error is the caller's


def stamp_ns(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time such as the API writes
    (``2026-01-02T03:04:05.123456789Z``; fewer digits, none, or an offset too); None if it is not one."""
    head, dot, rest = text.partition(".")
    frac = ""
    tail = rest if dot else ""
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, tail = rest[:digits], rest[digits:]
    else:
        head, tail = text[:19], text[19:]
    try:
        base = datetime.fromisoformat(head + (tail or "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    return int(base.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9])


class Resume:
    """A followed call's progress; ``lines`` filters a call's lines, ``request`` makes the next call."""

    def __init__(self, request: jobs_pb2.LogsRequest, window: float = RESUME_FOR) -> None:
        self.first = request
        self.show_stamps = request.timestamps
        self.window = window
        self.seen: dict[str, tuple[int, str, int]] = {}  # pod -> (last time ns, as written, lines at it)
        self.skip: dict[str, tuple[int, int]] = {}  # pod -> (time ns, lines at it still to drop)
        self.broken_at: float | None = None

    def request(self) -> jobs_pb2.LogsRequest:
        """The first call (with timestamps) or, after a break, the one that resumes it."""
        req = jobs_pb2.LogsRequest()
        req.CopyFrom(self.first)
        req.timestamps = True
        if self.seen:
            earliest = min(self.seen.values())
            req.since_time, req.since_seconds, req.tail_lines = earliest[1], 0, 0
            self.skip = {pod: (ns, n) for pod, (ns, _, n) in self.seen.items()}
        return req

    def lines(self, pod: str, lines: Iterable[str]) -> Iterator[str]:
        """The new ones among a chunk's lines, as the caller asked for them."""
        for line in lines:
            stamp, _, text = line.partition(" ")
            ns = stamp_ns(stamp)
            if ns is None:  # not stamped (cannot happen from the API): passed on as it is
                yield line
                continue
            self.broken_at = None
            drop = self.skip.get(pod)
            if drop is not None:
                if ns < drop[0]:
                    continue
                if ns == drop[0] and drop[1] > 0:
                    self.skip[pod] = (ns, drop[1] - 1)
                    continue
                if ns > drop[0]:
                    del self.skip[pod]
            last = self.seen.get(pod)
            n = last[2] + 1 if last is not None and last[0] == ns else 1
            self.seen[pod] = (ns, stamp, n)
            yield line if self.show_stamps else text

    def retry(self, code: grpc.StatusCode) -> float | None:
        """Seconds to wait before resuming after an error of ``code``; None: give up (say it)."""
        if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return None
        now = time.monotonic()
        if self.broken_at is None:
            self.broken_at = now
            return 0.2
        if now - self.broken_at > self.window:
            return None
        return min(2.0, 0.2 + (now - self.broken_at) / 4)
