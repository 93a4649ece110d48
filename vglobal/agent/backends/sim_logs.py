"""What a simulated pod writes, so `vglobal logs` shows output on the sim backend too.

A pod writes the lines of its ``vglobal.io/sim-log`` annotation when it starts, then one line
every ``vglobal.io/sim-log-interval`` while it runs (default: every 5 s when it has no
``sim-log``, never when it has one and no interval). Each line has a time, so ``since`` and
``timestamps`` behave as on a cluster; a simulated container never restarts (``previous`` is
refused as the API server refuses it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.logs import LogError
from vglobal.agent.pods import FINISHED_POD_PHASES, PodManifest, PodStatus
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.clock import Clock
from vglobal.model.duration import parse_duration

LOG_ANNOTATION = "vglobal.io/sim-log"
INTERVAL_ANNOTATION = "vglobal.io/sim-log-interval"
DEFAULT_INTERVAL = 5.0
MAX_WAIT = 1.0  # a follower looks again at least this often (the pod may end)
MIN_WAIT = 0.2  # and at most this often: a fast writer's lines go out together, not one by one
MAX_GENERATED = 100_000  # lines generated per container at most


def log_interval(annotations: Mapping[str, str]) -> float | None:
    """Seconds between the generated lines (None: none are)."""
    raw = annotations.get(INTERVAL_ANNOTATION)
    if raw:
        try:
            return max(0.05, parse_duration(raw))
        except ValueError:
            return None
    return None if LOG_ANNOTATION in annotations else DEFAULT_INTERVAL


def written(
    annotations: Mapping[str, str], pod: str, node: str, started: float, end: float, skip: int = 0
) -> list[tuple[float, str]]:
    """Every (time, line) a container of these annotations that started at ``started`` wrote by
    ``end``, but the first ``skip`` (the API emulator's containers write the same). A follower asks
    only for what is new: making every line again at each look cost it its whole output each time."""
    given = annotations.get(LOG_ANNOTATION, "").splitlines()
    out = [(started, line) for line in given[skip:]]
    every = log_interval(annotations)
    if every is not None:
        k = max(1, skip - len(given) + 1)
        while started + k * every <= end and k <= MAX_GENERATED:
            out.append((started + k * every, f"{pod} on {node}: step {k}"))
            k += 1
    return out


def since_time(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (the hub checked it), to the microsecond."""
    head, dot, rest = text.partition(".")
    if dot:  # Python reads at most 6 digits of a fraction; the API writes 9
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}" if digits else head + rest
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def stamped(t: float, line: str, timestamps: bool) -> str:
    """The line as the API sends it, with ``timestamps`` after its RFC 3339 time."""
    if not timestamps:
        return line
    return f"{datetime.fromtimestamp(t, UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {line}"


def _container(pod: PodManifest, wanted: str) -> str:
    names = [c.get("name", "") for c in (pod.obj.get("spec") or {}).get("containers") or []]
    if not wanted:
        return names[0] if names else "main"
    if wanted not in names:
        raise LogError(f"container {wanted} is not valid for pod {pod.name}")
    return wanted


def lines_until(pod: PodManifest, st: PodStatus, now: float, skip: int = 0) -> list[tuple[float, str]]:
    """Every (time, line) the pod wrote up to ``now``, but the first ``skip``."""
    if st.started is None:
        return []
    end = now if st.finished is None else min(now, st.finished)
    return written(pod.annotations, pod.name, st.node or "", st.started, end, skip)


class SimLogReader:
    def __init__(self, backend: SimBackend, clock: Clock) -> None:
        self.backend = backend
        self.clock = clock

    def _pod(self, req: pb.LogRequest) -> tuple[PodManifest, PodStatus]:
        found = self.backend.pod_named(req.namespace, req.pod)
        if found is None:
            raise LogError(f'pods "{req.pod}" not found')
        return found

    def read(self, req: pb.LogRequest, stop: threading.Event) -> Iterator[list[str]]:
        pod, st = self._pod(req)
        container = _container(pod, req.container)
        if req.previous:
            raise LogError(f'previous terminated container "{container}" in pod "{req.pod}" not found')
        if st.started is None:
            raise LogError(
                f'container "{container}" in pod "{req.pod}" is waiting to start: ContainerCreating'
            )
        now = self.clock.now()
        lines = lines_until(pod, st, now)
        first = lines
        if req.since_seconds:
            first = [(t, x) for t, x in first if t >= now - req.since_seconds]
        if req.since_time:
            since = since_time(req.since_time)
            first = [(t, x) for t, x in first if t >= since]
        if req.tail_lines:
            first = first[-req.tail_lines :]
        yield [stamped(t, x, req.timestamps) for t, x in first]
        done = len(lines)
        while req.follow and st.phase not in FINISHED_POD_PHASES and not stop.wait(self._wait(pod)):
            found = self.backend.pod_named(req.namespace, req.pod)
            if found is None or found[0].uid != pod.uid:
                return  # the pod is gone (or replaced): its output ends
            st = found[1]
            lines = lines_until(pod, st, self.clock.now(), done)
            if lines:
                yield [stamped(t, x, req.timestamps) for t, x in lines]
                done += len(lines)

    @staticmethod
    def _wait(pod: PodManifest) -> float:
        every = log_interval(pod.annotations)
        return MAX_WAIT if every is None else max(MIN_WAIT, min(every, MAX_WAIT))
