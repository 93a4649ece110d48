"""`vglobal get jobs -w` and `vglobal describe job NAME -w`: follow job changes as they happen."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from vglobal.api.v1 import jobs_pb2
from vglobal.cli.describe import describe_job
from vglobal.cli.interrupt import interruptible
from vglobal.cli.output import COLUMNS, cell
from vglobal.sdk import Client, EventType, JobEvent
from vglobal.sdk.rows import job_row

EVENT_NAMES = {v: k for k, v in jobs_pb2.JobEvent.Type.items()}


def parse_selector(text: str) -> dict[str, str]:
    """``-l a=b,c=d`` as a mapping; raises ValueError naming the bad part."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f'selector: "{part}" is not key=value')
        out[key.strip()] = value.strip()
    return out


class _Lines:
    """Rows printed one per line under a header, in columns as wide as the first rows need."""

    def __init__(self, columns: Sequence[str], first: Sequence[Mapping[str, Any]]) -> None:
        self.columns = ["event", *columns]
        self.widths = [
            max([len(c), *(len(cell(r.get(c))) for r in first)]) + 2 if c != "reason" else 0
            for c in self.columns
        ]
        self.widths[0] = max(len(kind) for kind in (*EVENT_NAMES.values(), "LISTED")) + 2

    def line(self, row: Mapping[str, Any]) -> str:
        # A value wider than the first rows' still leaves a space before the next column.
        return "".join(
            f"{cell(row.get(c)):<{max(w - 1, 0)}} " for c, w in zip(self.columns, self.widths, strict=True)
        ).rstrip()

    def header(self) -> str:
        return self.line({c: c.upper() for c in self.columns})


def _emit(out: _Lines | None, kind: str, revision: int, job: jobs_pb2.Job, kinds: dict[str, str]) -> None:
    # A change event carries no manifest, so not the job's kind: the listing said it.
    kinds.setdefault(job.uid, job.kind)
    row = {**job_row(job), "kind": job.kind or kinds[job.uid], "event": kind, "revision": revision}
    print(json.dumps(row) if out is None else out.line(row), flush=True)


def watch_jobs(client: Client, *, fmt: str, namespace: str, queue: str, labels: dict[str, str]) -> None:
    """List the jobs, then print every change of them until interrupted."""
    interruptible()
    jobs, revision = client.list_jobs_at(namespace=namespace, queue=queue, labels=labels)
    rows = [job_row(j) for j in jobs]
    out = (
        None
        if fmt in ("json", "yaml")
        else _Lines(COLUMNS["jobs"]["wide" if fmt == "wide" else "table"], rows)
    )
    if out is not None:
        print(out.header(), flush=True)
    kinds: dict[str, str] = {}
    for j in jobs:
        _emit(out, "LISTED", revision, j, kinds)
    try:
        for ev in client.watch_jobs(from_revision=revision, namespace=namespace, queue=queue, labels=labels):
            _emit(out, ev.type.name, ev.revision, ev.job, kinds)
    except KeyboardInterrupt:
        sys.exit(0)


def change_line(ev: JobEvent, name: str = "") -> str:
    """One change of a followed job: when, what, its phases and run, why (``name``: say whose)."""
    j = ev.job
    return (
        f"  {ev.time.ToDatetime():%H:%M:%S}  {ev.type.name:<8} {f'{name}: ' if name else ''}"
        f"phase {j.phase}, binding {j.binding_phase}"
        + (f" on {j.cluster} (generation {j.generation})" if j.cluster else "")
        + (f": {j.reason}" if j.reason else "")
    )


def follow_job(client: Client, name: str, namespace: str, console: Console) -> None:
    """``describe job``, then each change of the job and its new events, until it is deleted."""
    interruptible()
    # The stream opens (its first event a bookmark) before the job is shown: no change falls between.
    events = client.watch_jobs(namespace=namespace, name=name, bookmarks=True)
    next(events)
    describe_job(client, name, namespace, console)
    seen = max((e.id for e in client.explain_job(name, namespace).events), default=0)
    console.print("Following (Ctrl-C to stop):", highlight=False)
    try:
        for ev in events:
            if ev.type == EventType.BOOKMARK:
                continue
            console.print(change_line(ev), highlight=False, soft_wrap=True)
            if ev.type == EventType.DELETED:
                return
            for e in client.explain_job(name, namespace).events:
                if e.id > seen:
                    seen = e.id
                    console.print(
                        f"  {e.time.ToDatetime():%H:%M:%S}  event    {e.reason}: {e.message}",
                        highlight=False,
                        soft_wrap=True,
                    )
    except KeyboardInterrupt:
        sys.exit(0)
