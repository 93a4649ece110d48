"""How `vglobal get` prints its rows (``vglobal.sdk.rows``): the same fields in tables, JSON and YAML."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from vglobal.sdk.rows import short

COLUMNS: dict[str, dict[str, list[str]]] = {
    **{
        kind: {
            "table": ["namespace", "name", "type", "data", "updated"],
            "wide": ["namespace", "name", "type", "data", "bytes", "revision", "updated"],
        }
        for kind in ("configmaps", "secrets")
    },
    "jobs": {
        "table": ["namespace", "name", "kind", "queue", "phase", "bindingPhase", "cluster", "reason"],
        "wide": [
            "namespace",
            "name",
            "kind",
            "queue",
            "priority",
            "phase",
            "bindingPhase",
            "cluster",
            "generation",
            "attempts",
            "request",
            "reason",
            "startsIn",
        ],
    },
    "queues": {
        "table": [
            "name",
            "parent",
            "weight",
            "state",
            "allocated",
            "usageShare",
            "pendingJobs",
            "runningJobs",
        ],
        "wide": [
            "name",
            "parent",
            "weight",
            "priority",
            "state",
            "capability",
            "deserved",
            "guarantee",
            "allocated",
            "running",
            "reserved",
            "budget",
            "usage",
            "usageShare",
            "pendingJobs",
            "runningJobs",
        ],
    },
    "cronjobs": {
        "table": ["namespace", "name", "schedule", "timeZone", "suspend", "active", "lastSchedule", "age"],
        "wide": [
            "namespace",
            "name",
            "schedule",
            "timeZone",
            "suspend",
            "concurrencyPolicy",
            "active",
            "lastSchedule",
            "lastSuccessful",
            "nextSchedule",
            "queue",
            "age",
        ],
    },
    "jobflows": {
        "table": ["namespace", "name", "phase", "completed", "age"],
        "wide": ["namespace", "name", "phase", "completed", "retainPolicy", "steps", "age"],
    },
    "jobtemplates": {
        "table": ["namespace", "name", "queue", "tasks", "age"],
        "wide": ["namespace", "name", "queue", "tasks", "age"],
    },
    "priorityclasses": {
        "table": ["name", "value", "globalDefault"],
        "wide": ["name", "value", "globalDefault", "preemptionPolicy"],
    },
    "namespaces": {
        "table": ["name", "queue"],
        "wide": ["name", "queue", "labels"],
    },
    "clusters": {
        "table": ["name", "state", "nodes", "capacity", "free", "runningJobs"],
        "wide": ["name", "state", "labels", "nodes", "capacity", "free", "runningJobs", "lastHeartbeat"],
    },
    "pods": {
        "table": ["namespace", "name", "job", "cluster", "node", "status", "restarts", "cause"],
        "wide": ["namespace", "name", "job", "task", "cluster", "node", "ip", "status", "restarts", "cause"],
    },
    "nodes": {
        "table": ["name", "cluster", "status", "allocatable", "free"],
        "wide": ["name", "cluster", "status", "allocatable", "free", "taints", "labels"],
    },
}


def cell(value: Any) -> str:
    if isinstance(value, Mapping):
        return short(value)
    if isinstance(value, list):
        return (
            ",".join(f"{v['name']}={v['phase']}" if isinstance(v, Mapping) else str(v) for v in value) or "-"
        )
    if value in ("", None):
        return "-"
    return str(value)


def table(kind: str, rows: Sequence[Mapping[str, Any]], wide: bool, header: bool = True) -> Table:
    cols = COLUMNS[kind]["wide" if wide else "table"]
    t = Table(box=None, header_style="bold", pad_edge=False, show_header=header)
    for c in cols:
        t.add_column(c.upper(), overflow="fold" if c in ("reason", "cause") else "ellipsis")
    for r in rows:
        t.add_row(*[cell(r.get(c)) for c in cols])
    return t


# What `-o name` prints before each name, as kubectl does (resource.group/name).
RESOURCE_NAMES = {
    "jobs": "job.batch.volcano.sh",
    "queues": "queue.scheduling.volcano.sh",
    "priorityclasses": "priorityclass.scheduling.k8s.io",
    "namespaces": "namespace",
    "clusters": "cluster.vglobal.io",
    "nodes": "node",
    "pods": "pod",
    "cronjobs": "cronjob.batch.volcano.sh",
    "jobflows": "jobflow.flow.volcano.sh",
    "jobtemplates": "jobtemplate.flow.volcano.sh",
    "hypernodes": "hypernode.topology.volcano.sh",
    "configmaps": "configmap",
    "secrets": "secret",
}


def plain_table(
    kind: str,
    rows: Sequence[Mapping[str, Any]],
    wide: bool,
    header: bool = True,
    widths: Sequence[int] | None = None,
) -> str:
    """The table as text as wide as its cells need, nothing cut (kubectl's layout: columns three
    spaces apart): for pipes, logs and ``-o wide``. ``widths``: at least these (a watch keeps the
    first listing's)."""
    cols = COLUMNS[kind]["wide" if wide else "table"]
    lines = [[c.upper() for c in cols]] if header else []
    lines += [[cell(r.get(c)).replace("\n", " ") for c in cols] for r in rows]
    least = widths or [0] * len(cols)
    widths = [max([least[i], *(len(line[i]) for line in lines)]) for i in range(len(cols))]
    return "".join(
        "   ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() + "\n" for line in lines
    )


def print_table(
    kind: str, rows: Sequence[Mapping[str, Any]], fmt: str, console: Console, header: bool = True
) -> None:
    """On a terminal a table fits its width (long reasons fold); elsewhere, and always with
    ``-o wide``, nothing is cut."""
    wide = fmt == "wide"
    if console.is_terminal and not wide:
        console.print(table(kind, rows, wide=False, header=header))
    else:
        console.file.write(plain_table(kind, rows, wide, header))


def emit(kind: str, rows: list[dict[str, Any]], fmt: str, console: Console) -> None:
    if fmt == "json":
        print(json.dumps(rows, indent=2))
    elif fmt == "yaml":
        print(yaml.safe_dump(rows, sort_keys=False), end="")
    elif fmt == "name":
        sys.stdout.write("".join(f"{RESOURCE_NAMES[kind]}/{r['name']}\n" for r in rows))
    else:
        print_table(kind, rows, fmt, console)


def emit_pages(kind: str, pages: Iterable[list[dict[str, Any]]], fmt: str, console: Console) -> None:
    """``emit`` of rows that come page by page, each printed as it comes (the whole list is never
    held): the same JSON and YAML as ``emit``; a table per page, aligned within its page, as
    kubectl prints chunks."""
    first = True
    for rows in pages:
        if fmt == "json":
            for r in rows:
                item = json.dumps(r, indent=2).replace("\n", "\n  ")
                sys.stdout.write(("[\n  " if first else ",\n  ") + item)
                first = False
        elif fmt == "yaml":
            if rows:
                sys.stdout.write(yaml.safe_dump(rows, sort_keys=False))
                first = False
        elif fmt == "name":
            sys.stdout.write("".join(f"{RESOURCE_NAMES[kind]}/{r['name']}\n" for r in rows))
        elif rows or first:
            print_table(kind, rows, fmt, console, header=first)
            first = False
    if fmt == "json":
        sys.stdout.write("[]\n" if first else "\n]\n")
    elif fmt == "yaml" and first:
        sys.stdout.write("[]\n")
    sys.stdout.flush()
