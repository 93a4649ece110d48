"""`vglobal describe cronjob|jobflow`: a CronJob with its runs, a JobFlow's DAG with each step's state."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from vglobal.api.v1 import common_pb2, jobflows_pb2
from vglobal.sdk import Client
from vglobal.sdk.rows import stamp

# How a step's phase shows in the DAG.
MARKS = {
    "Completed": "done",
    "Running": "running",
    "Pending": "pending",
    "Waiting": "waiting",
    "Skipped": "skipped",
    "Failed": "FAILED",
    "Aborted": "ABORTED",
    "Terminated": "TERMINATED",
}


def _fields(console: Console, lines: Sequence[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in lines) + 1
    for k, v in lines:
        console.print(f"{k + ':':<{width}} {v or '-'}", highlight=False, soft_wrap=True)


def _events(console: Console, events: Sequence[common_pb2.Event]) -> None:
    console.print("Events:", highlight=False)
    if not events:
        console.print("  <none>", highlight=False)
    for e in events:
        when = e.time.ToDatetime().strftime("%Y-%m-%d %H:%M:%S")
        console.print(f"  {when}  {e.kind:<7} {e.reason:<17} {e.message}", highlight=False, soft_wrap=True)


def describe_cronjob(client: Client, name: str, namespace: str, console: Console) -> None:
    c = client.get_cron_job(name, namespace)
    deadline = f"{c.starting_deadline_seconds}s" if c.HasField("starting_deadline_seconds") else "none"
    _fields(
        console,
        [
            ("Name", c.name),
            ("Namespace", c.namespace),
            ("UID", c.uid),
            ("Schedule", f"{c.schedule} ({c.time_zone or 'UTC'})"),
            ("Concurrency policy", c.concurrency_policy),
            ("Suspend", str(c.suspend)),
            ("Starting deadline", deadline),
            (
                "History limits",
                f"{c.successful_jobs_history_limit} successful, {c.failed_jobs_history_limit} failed",
            ),
            ("Queue", c.queue),
            ("Last schedule", stamp(c, "last_schedule_time")),
            ("Last successful", stamp(c, "last_successful_time")),
            ("Next schedule", stamp(c, "next_schedule_time") or ("suspended" if c.suspend else "")),
            ("Active", ", ".join(c.active)),
            ("Created", stamp(c, "created_at")),
        ],
    )
    console.print("Jobs:", highlight=False)
    if not c.jobs:
        console.print("  <none>", highlight=False)
    for j in c.jobs:
        console.print(
            f"  {j.name:<40} {j.phase:<10} {j.binding_phase:<10} {j.cluster or '-':<14} "
            f"{j.created_at.ToJsonString()}",
            highlight=False,
        )
    _events(console, c.events)


def dag_lines(steps: Sequence[jobflows_pb2.FlowStep]) -> list[str]:
    """The DAG as an indented tree from the steps nothing depends on before: each step under each
    step it depends on, shown in full once and as "(see above)" after."""
    children: dict[str, list[str]] = {s.name: [] for s in steps}
    for s in steps:
        for target in s.depends_on:
            children.setdefault(target, []).append(s.name)
    by_name = {s.name: s for s in steps}
    shown: set[str] = set()
    lines: list[str] = []

    def label(name: str) -> str:
        s = by_name[name]
        text = f"{name} [{MARKS.get(s.phase, s.phase)}]"
        if len(s.depends_on) > 1:
            text += f" after {', '.join(s.depends_on)}"
        return text

    # A depth-first walk with its own stack (a long chain needs no deep recursion).
    stack: list[tuple[str, str, str]] = [
        (s.name, "", "") for s in reversed([s for s in steps if not s.depends_on])
    ]
    while stack:
        name, lead, rest = stack.pop()
        if name in shown:
            lines.append(f"{lead}{name} (see above)")
            continue
        shown.add(name)
        lines.append(lead + label(name))
        kids = children.get(name, [])
        for i, kid in reversed(list(enumerate(kids))):
            last = i == len(kids) - 1
            stack.append((kid, rest + ("└─> " if last else "├─> "), rest + ("    " if last else "│   ")))
    return lines


def describe_jobflow(client: Client, name: str, namespace: str, console: Console) -> None:
    f = client.get_job_flow(name, namespace)
    _fields(
        console,
        [
            ("Name", f.name),
            ("Namespace", f.namespace),
            ("UID", f.uid),
            ("Phase", f.phase),
            ("Job retain policy", f.job_retain_policy),
            ("Created", stamp(f, "created_at")),
        ],
    )
    console.print("DAG:", highlight=False)
    for line in dag_lines(f.steps):
        console.print(f"  {line}", highlight=False, markup=False)
    console.print("Steps:", highlight=False)
    for s in f.steps:
        times = " -> ".join(t for t in (stamp(s, "created_at"), stamp(s, "finished_at")) if t)
        console.print(f"  {s.name:<20} {s.phase:<10} {s.job:<40} {times}", highlight=False, soft_wrap=True)
    _events(console, f.events)
