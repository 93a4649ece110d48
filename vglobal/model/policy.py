"""Volcano lifecycle policies (``spec.policies`` / ``spec.tasks[i].policies``) and their checks."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, StrictStr

from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems
from vglobal.model.k8s import Int32, Model

# Events and actions a user may put in a policy. Volcano's webhook also knows OutOfSync,
# CommandIssued, SyncJob and EnqueueJob but refuses them: the controller raises them itself.
EVENTS = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
INTERNAL_EVENTS = ("OutOfSync", "CommandIssued")
ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
INTERNAL_ACTIONS = ("SyncJob", "EnqueueJob")


@dataclass(frozen=True, kw_only=True)
class Policy:
    events: tuple[str, ...] = ()
    exit_code: int | None = None
    action: str = ""
    timeout_seconds: float | None = None


class PolicySpec(Model):
    event: StrictStr = ""
    events: list[StrictStr] = Field(default_factory=list)
    exit_code: Int32 | None = None
    action: StrictStr = ""
    timeout: StrictStr | None = None


def _check_event(p: Problems, field: str, event: str) -> bool:
    if event in EVENTS:
        return True
    if event in INTERNAL_EVENTS:
        p.add(field, f'event "{event}" is raised by Volcano itself and cannot be used in a policy')
    else:
        p.add(field, f'invalid policy event "{event}" (valid: {", ".join(EVENTS)})')
    return False


def _check_action(p: Problems, field: str, action: str) -> None:
    if action in ACTIONS:
        return
    if not action:
        p.add(field, f"required (one of {', '.join(ACTIONS)})")
    elif action in INTERNAL_ACTIONS:
        p.add(field, f'action "{action}" is used by Volcano itself and cannot be used in a policy')
    else:
        p.add(field, f'invalid policy action "{action}" (valid: {", ".join(ACTIONS)})')


def build_policies(p: Problems, base: str, specs: list[PolicySpec]) -> tuple[Policy, ...]:
    """Validate like Volcano's webhook, naming the field of every problem; returns the policies."""
    out: list[Policy] = []
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for i, spec in enumerate(specs):
        path = f"{base}[{i}]"
        has_event = bool(spec.event or spec.events)
        if has_event and spec.exit_code is not None:
            p.add(path, "must not specify event and exitCode simultaneously")
            continue
        if not has_event and spec.exit_code is None:
            p.add(path, "either event or exitCode must be specified")
            continue
        # Volcano's order: events first, then event, duplicates removed.
        located = [(f"{path}.events[{j}]", e) for j, e in enumerate(spec.events)]
        if spec.event:
            located.append((f"{path}.event", spec.event))
        events: list[str] = []
        for where, event in located:
            if event in events or not _check_event(p, where, event):
                continue
            if event in seen_events:
                p.add(where, f'duplicate event "{event}" across policies')
            seen_events.add(event)
            events.append(event)
        if spec.exit_code is not None:
            if spec.exit_code == 0:
                p.add(f"{path}.exitCode", "0 is not a valid exit code")
            elif spec.exit_code in seen_codes:
                p.add(f"{path}.exitCode", f"duplicate exitCode {spec.exit_code}")
            seen_codes.add(spec.exit_code)
        _check_action(p, f"{path}.action", spec.action)
        timeout: float | None = None
        if spec.timeout is not None:
            try:
                timeout = parse_duration(spec.timeout)
            except ValueError:
                p.add(f"{path}.timeout", f'invalid duration "{spec.timeout}" (use Go form like "30s", "5m")')
            else:
                if timeout < 0:
                    p.add(f"{path}.timeout", "must not be negative")
        out.append(
            Policy(
                events=tuple(events), exit_code=spec.exit_code, action=spec.action, timeout_seconds=timeout
            )
        )
    if "*" in seen_events and len(seen_events) > 1:
        p.add(base, 'when "*" is one of the events, no other event may be given')
    return tuple(out)
