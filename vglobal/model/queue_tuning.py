"""Fair-share settings a queue sets for its subtree, and the checkpoint interval a job declares.

``vglobal.io/fair-share-half-life`` (a Go duration) on a queue: its usage decays with this half-life
instead of the hub's --fair-share-half-life. ``vglobal.io/overcommit-factor`` (a number ≥ 1) on a
queue: the agent's overcommit plugin lets its jobs enqueue while their minResources fit in the
cluster's capacity times this factor (Volcano's overcommit, queue-scoped). Both are inherited down
the queue tree: a queue without the setting takes its nearest ancestor's.
``vglobal.io/checkpoint-interval`` (a Go duration) on a job: it saves its work this often, so a stop
loses only the run since the last checkpoint (admission/victims/worth.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems, key_path

HALF_LIFE_ANNOTATION = "vglobal.io/fair-share-half-life"
OVERCOMMIT_ANNOTATION = "vglobal.io/overcommit-factor"
CHECKPOINT_ANNOTATION = "vglobal.io/checkpoint-interval"


def _duration(p: Problems, annotations: Mapping[str, str], key: str) -> float | None:
    text = annotations.get(key, "").strip()
    if not text:
        return None
    try:
        value = parse_duration(text)
    except ValueError as exc:
        p.add(key_path("metadata.annotations", key), str(exc))
        return None
    if value < 0:
        p.add(key_path("metadata.annotations", key), f"must not be negative, got {text!r}")
        return None
    return value


def half_life(p: Problems, annotations: Mapping[str, str]) -> float | None:
    """The queue's own fair-share half-life in seconds; None = not set."""
    return _duration(p, annotations, HALF_LIFE_ANNOTATION)


def checkpoint_interval(p: Problems, annotations: Mapping[str, str]) -> float:
    """The job's checkpoint interval in seconds; 0 = none declared."""
    return _duration(p, annotations, CHECKPOINT_ANNOTATION) or 0.0


def overcommit_factor(p: Problems, annotations: Mapping[str, str]) -> float | None:
    """The queue's own overcommit factor; None = not set."""
    text = annotations.get(OVERCOMMIT_ANNOTATION, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 1.0 or value == float("inf"):
        where = key_path("metadata.annotations", OVERCOMMIT_ANNOTATION)
        p.add(where, f"must be a number of at least 1, got {text!r}")
        return None
    return value


def check_queue_tuning(p: Problems, annotations: Mapping[str, str]) -> None:
    half_life(p, annotations)
    overcommit_factor(p, annotations)


def inherited_half_life(chain: Iterable[Mapping[str, str]]) -> float | None:
    """From the annotations of a queue and its ancestors, nearest first: the nearest setting."""
    for marks in chain:
        got = half_life(Problems(), marks)  # stored queues were checked when applied
        if got is not None:
            return got
    return None


def inherited_overcommit(chain: Iterable[Mapping[str, str]]) -> float | None:
    for marks in chain:
        got = overcommit_factor(Problems(), marks)
        if got is not None:
            return got
    return None


def queue_half_lives(notes: Mapping[str, tuple[str | None, Mapping[str, str]]]) -> dict[str, float]:
    """Per queue with a half-life of its own or an ancestor's, from (parent, annotations) by name."""
    out: dict[str, float] = {}
    for name in notes:
        chain: list[Mapping[str, str]] = []
        seen: set[str] = set()
        at: str | None = name
        while at is not None and at in notes and at not in seen:
            seen.add(at)
            parent, marks = notes[at]
            chain.append(marks)
            at = parent
        got = inherited_half_life(chain)
        if got is not None:
            out[name] = got
    return out
