"""`vglobal get queues|clusters -w`: the list, then a line for each object that changes.

The hub has no watch stream for queues and clusters: the list is read again every ``interval``
seconds and each row that differs from the last read is printed (kubectl's ``-w`` layout: the
first listing's columns, then changed rows under them)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from vglobal.cli.interrupt import interruptible
from vglobal.cli.output import COLUMNS, cell, plain_table

Rows = Callable[[], list[dict[str, Any]]]


def watch_rows(kind: str, fetch: Rows, *, fmt: str, interval: float = 2.0) -> None:
    """Print the rows, then every changed or removed row, until interrupted."""
    interruptible()
    wide = fmt == "wide"
    rows = fetch()
    cols = COLUMNS[kind]["wide" if wide else "table"]
    head = [c.upper() for c in cols]
    widths = [max([len(h), *(len(cell(r.get(c))) for r in rows)]) for h, c in zip(head, cols, strict=True)]

    def show(changed: list[dict[str, Any]], header: bool = False) -> None:
        if fmt in ("json", "yaml"):
            sys.stdout.write("".join(json.dumps(r) + "\n" for r in changed))
        else:
            sys.stdout.write(plain_table(kind, changed, wide, header=header, widths=widths))
        sys.stdout.flush()

    show(rows, header=True)
    last = {r["name"]: r for r in rows}
    try:
        while True:
            time.sleep(interval)
            now = {r["name"]: r for r in fetch()}
            changed = [r for name, r in now.items() if last.get(name) != r]
            gone = [
                {"name": name, **{c: "(deleted)" for c in cols if c != "name"}}
                for name in last.keys() - now.keys()
            ]
            if changed or gone:
                show(changed + gone)
            last = now
    except KeyboardInterrupt:
        sys.exit(0)
