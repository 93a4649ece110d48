"""Policy timeouts that outlive their pod.

Volcano keeps a delayed action per pod name, not per pod: a ``PodEvicted`` or ``PodFailed``
action with a ``timeout`` waits while the replacement of that pod is created and pending, and is
cancelled only when a pod of that name runs. When the deadline passes first, the action applies.
A later eviction of the replacement with the same action keeps the first deadline.

The deadline is written on the replacement pod (an annotation) so that an agent which restarts
and takes over its pods from the cluster finds it again, as it finds the run's version there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from vglobal.agent.pods import PodPhase
from vglobal.agent.policies import Request
from vglobal.agent.run import Delayed

CARRIED_EVENTS = frozenset({"PodFailed", "PodEvicted"})
DEADLINE_ANNOTATION = "vglobal.io/policy-deadline"
STARTED = frozenset({PodPhase.Running, PodPhase.Succeeded})


def carried(d: Delayed) -> bool:
    """Whether the delayed action belongs to the pod name (kept across its replacements)."""
    return d.request.event in CARRIED_EVENTS and d.request.pod is not None


def add(delayed: Iterable[Delayed], new: Delayed) -> list[Delayed]:
    """``delayed`` with ``new``, unless the same pod name already waits for the same action."""
    out = list(delayed)
    if carried(new) and any(
        carried(d) and d.request.pod == new.request.pod and d.action == new.action for d in out
    ):
        return out
    out.append(new)
    return out


def started(delayed: Iterable[Delayed], pod: str) -> list[Delayed]:
    """A pod of this name runs: the carried actions waiting for it are cancelled."""
    return [d for d in delayed if not (carried(d) and d.request.pod == pod)]


def due(delayed: Iterable[Delayed], now: float) -> tuple[list[Delayed], list[Delayed]]:
    """(due now in deadline order, still waiting)."""
    ready: list[Delayed] = []
    waiting: list[Delayed] = []
    for d in delayed:
        (ready if d.due <= now else waiting).append(d)
    return sorted(ready, key=lambda d: d.due), waiting


def for_pod(delayed: Iterable[Delayed], pod: str) -> list[Delayed]:
    return [d for d in delayed if carried(d) and d.request.pod == pod]


def encode(items: Iterable[Delayed]) -> str:
    """The carried actions of one pod name as the replacement's annotation value."""
    return json.dumps(
        [
            {
                "due": d.due,
                "version": d.version,
                "action": d.action,
                "event": d.request.event,
                "task": d.request.task,
                "pod": d.request.pod,
            }
            for d in items
        ],
        sort_keys=True,
    )


def decode(raw: str) -> list[Delayed]:
    """What ``encode`` wrote; anything unreadable is dropped (the pod then simply waits)."""
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    out: list[Delayed] = []
    if not isinstance(items, list):
        return out
    for item in items:
        try:
            event, pod, action = str(item["event"]), str(item["pod"]), str(item["action"])
            task = None if item.get("task") is None else str(item["task"])
            d = Delayed(float(item["due"]), int(item["version"]), Request(event, task, pod), action)
        except (KeyError, TypeError, ValueError):
            continue
        if carried(d):
            out.append(d)
    return out


def of_object(obj: Mapping[str, Any]) -> list[Delayed]:
    """The carried actions a pod object names in its annotation."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(DEADLINE_ANNOTATION)
    return decode(raw) if isinstance(raw, str) else []
