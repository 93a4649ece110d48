"""`vglobal diff -f FILE`: what `vglobal apply` of the files would change, as a unified diff of each
object as the hub holds it and as the files write it; exit 1 when something differs, 0 when
nothing does, 2 on an error (kubectl diff's codes)."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from vglobal.cli.claims import attach_claims
from vglobal.cli.common import Ctx, console, err_console
from vglobal.cli.documents import DocumentError, apply_order, read_documents
from vglobal.cli.live import LIVE, comparable, key_of, named, namespace_of
from vglobal.cli.pod_groups import attach_pods
from vglobal.model import apply_rules
from vglobal.sdk import VGlobalError


def shown(manifest: dict[str, Any] | None) -> list[str]:
    """The object as the diff shows it: what a caller sets (no status, no server-set metadata)."""
    if manifest is None:
        return []
    out = {k: v for k, v in manifest.items() if k != "status"}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in apply_rules.SERVER_SET}
    return yaml.safe_dump(out, sort_keys=True, default_flow_style=False).splitlines(keepends=True)


@click.command()
@click.option(
    "-f",
    "--filename",
    "paths",
    type=click.Path(path_type=Path, allow_dash=True),
    multiple=True,
    required=True,
    help="A file, a directory or - for stdin; repeat for more.",
)
@click.pass_obj
def diff(obj: Ctx, paths: tuple[Path, ...]) -> None:
    """Show what `vglobal apply -f` would change: live object against the files (exit 1: they differ)."""
    try:
        docs, _ = attach_claims(apply_order(read_documents(list(paths))))  # as apply sends them
        docs = attach_pods(docs)
    except DocumentError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        sys.exit(2)
    differs = False
    for d in docs:
        kind = key_of(d)
        if kind not in LIVE:
            err_console.print(f"{d.source} ({d.kind} {d.name}): not compared", highlight=False)
            continue
        ns = namespace_of(d)
        try:
            live = LIVE[kind].get(obj.client, ns, d.name)
        except VGlobalError as exc:
            err_console.print(f"[red]error:[/red] {d.source} ({d.kind} {d.name}): {exc}", highlight=False)
            sys.exit(2)
        if live is not None and apply_rules.same(live, comparable(d)):
            continue
        differs = True
        what = named(kind, ns, d.name)
        lines = difflib.unified_diff(shown(live), shown(comparable(d)), f"live/{what}", f"applied/{what}")
        console.out("".join(lines), end="", highlight=False)
    sys.exit(1 if differs else 0)
