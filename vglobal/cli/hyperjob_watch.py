"""`vglobal get hyperjobs -w`: the HyperJobs, then a line each time one's status changes (read
again from the hub on every change of one of its children, as the job watch tells them); and
`vglobal describe hyperjob NAME -w`: the HyperJob, then each change of a child and its events."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from vglobal.cli.hyperjobs import child_events, describe_hyperjob, event_line, hyperjob_rows
from vglobal.cli.interrupt import interruptible
from vglobal.cli.watching import change_line
from vglobal.model import hyperjob
from vglobal.sdk import Client, EventType

COLUMNS = ("EVENT", "NAME", "NAMESPACE", "PHASE", "RUNNING", "MIN", "PODS", "CLUSTERS")
WIDTHS = (10, 24, 12, 10, 8, 4, 6, 0)


def _cells(event: str, r: dict[str, Any]) -> tuple[str, ...]:
    kids = r["children"]
    clusters = ",".join(sorted({k["cluster"] for k in kids if k["cluster"]})) or "-"
    return (
        event,
        r["name"],
        r["namespace"],
        r["phase"],
        f"{r['runningChildren']}/{len(kids)}",
        str(r["minAvailable"]),
        str(sum(k["running"] for k in kids)),
        clusters,
    )


def _line(cells: Sequence[str]) -> str:
    return " ".join(f"{c:<{w}}" for c, w in zip(cells, WIDTHS, strict=True)).rstrip()


def _summary(r: dict[str, Any]) -> tuple[str, ...]:
    """What a line shows, and each child's state: a change of anything else prints nothing."""
    kids = tuple((k["cluster"], k["phase"], k["generation"], k["running"]) for k in r["children"])
    return (*_cells("", r)[1:], str(kids))


def watch_hyperjobs(client: Client, *, fmt: str, namespace: str, names: Sequence[str]) -> None:
    """List the HyperJobs (those of ``names`` when given), then print each change of one."""
    interruptible()
    labels = {hyperjob.HYPERJOB_LABEL: names[0]} if len(names) == 1 else None
    # The stream opens (its first event a bookmark) before the list: no change falls between.
    events = client.watch_jobs(namespace=namespace, labels=labels, bookmarks=True)
    next(events)
    as_json = fmt in ("json", "yaml")
    seen: dict[tuple[str, str], tuple[str, ...]] = {}

    def emit(event: str, r: dict[str, Any]) -> None:
        print(json.dumps({"event": event, **r}) if as_json else _line(_cells(event, r)), flush=True)

    if not as_json:
        print(_line(COLUMNS), flush=True)
    rows = [r for n in names for r in hyperjob_rows(client, namespace or "default", n)] if names else None
    for r in rows if rows is not None else hyperjob_rows(client, namespace):
        seen[(r["namespace"], r["name"])] = _summary(r)
        emit("LISTED", r)
    try:
        for ev in events:
            name = ev.job.labels.get(hyperjob.HYPERJOB_LABEL)
            if not name or (names and name not in names):
                continue
            key = (ev.job.namespace, name)
            now = hyperjob_rows(client, ev.job.namespace, name)
            if not now:
                if seen.pop(key, None) is not None:
                    emit(
                        "DELETED",
                        {
                            "name": name,
                            "namespace": ev.job.namespace,
                            "phase": "",
                            "children": [],
                            "runningChildren": 0,
                            "minAvailable": 0,
                        },
                    )
                continue
            summary = _summary(now[0])
            if seen.get(key) != summary:
                emit("MODIFIED" if key in seen else "ADDED", now[0])
                seen[key] = summary
    except KeyboardInterrupt:
        sys.exit(0)


def follow_hyperjob(client: Client, name: str, namespace: str, console: Console) -> None:
    """``describe hyperjob``, then each change of a child, the children's new events and the
    HyperJob's new phase, until every child is deleted."""
    interruptible()
    # The stream opens (its first event a bookmark) before the HyperJob is shown: no change falls between.
    events = client.watch_jobs(namespace=namespace, labels={hyperjob.HYPERJOB_LABEL: name}, bookmarks=True)
    next(events)
    describe_hyperjob(client, name, namespace, console)
    rows = hyperjob_rows(client, namespace, name)
    if not rows:
        return  # deleted since
    row = rows[0]
    children = {k["name"] for k in row["children"]}
    phase = row["phase"]
    seen: dict[str, int] = {}
    for child, e in child_events(client, sorted(children), namespace):
        seen[child] = max(seen.get(child, 0), e.id)
    console.print("Following (Ctrl-C to stop):", highlight=False)
    try:
        for ev in events:
            if ev.type == EventType.BOOKMARK:
                continue
            j = ev.job
            console.print(change_line(ev, j.name), highlight=False, soft_wrap=True)
            if ev.type == EventType.DELETED:
                children.discard(j.name)
                if not children:
                    console.print(f"HyperJob {namespace}/{name} deleted", highlight=False)
                    return
                continue
            for child, e in child_events(client, [j.name], namespace):
                if e.id > seen.get(child, 0):
                    seen[child] = e.id
                    console.print(event_line(child, e), highlight=False, soft_wrap=True)
            now = hyperjob_rows(client, namespace, name)
            if now and now[0]["phase"] != phase:
                phase = now[0]["phase"]
                running = f"{now[0]['runningChildren']}/{len(now[0]['children'])}"
                said = f"HyperJob {namespace}/{name} {phase}: {running} children running"
                console.print(said, highlight=False)
    except KeyboardInterrupt:
        sys.exit(0)
