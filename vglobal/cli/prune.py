"""`vglobal apply --prune -l SELECTOR`: what carries the selector, of any kind apply takes, and is
not in the files is deleted, so a Git repository can be the source of truth (kubectl's prune)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console

from vglobal.cli.documents import Document
from vglobal.cli.live import LIVE, key_of, matches, named, namespace_of
from vglobal.sdk import Client, VGlobalError


def parse_selector(text: str) -> dict[str, str]:
    """``key=value[,key=value...]`` (``==`` too); ValueError naming what does not parse."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.replace("==", "=").partition("=")
        if not sep or not key.strip() or "!" in key:
            raise ValueError(f"{part!r}: expected key=value (only equality selectors)")
        out[key.strip()] = value.strip()
    return out


def labels_of(d: Document) -> dict[str, str]:
    meta = d.body.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def selected(docs: list[Document], selector: Mapping[str, str]) -> list[Document]:
    """The documents that carry the selector: only those are applied (kubectl apply -l)."""
    return [d for d in docs if matches(labels_of(d), selector)]


def prune(
    client: Client,
    docs: list[Document],
    selector: Mapping[str, str],
    console: Console,
    err_console: Console,
    *,
    dry_run: bool = False,
) -> bool:
    """Delete what carries ``selector``, of every kind apply takes (as kubectl's default prune
    list), that ``docs`` do not name; True when every delete went through. Jobs go before the
    queues they are in."""
    keep = {(key_of(d), namespace_of(d), d.name) for d in docs if key_of(d) in LIVE}
    ok = True
    for kind in sorted(LIVE, key=lambda k: (k in ("Queue", "PriorityClass"), k)):
        entry = LIVE[kind]
        try:
            found = entry.listing(client, selector)
        except VGlobalError as exc:
            err_console.print(f"[red]error:[/red] listing {entry.resource} to prune: {exc}", highlight=False)
            ok = False
            continue
        for live in sorted(found, key=lambda o: (o.namespace, o.name)):
            if (kind, live.namespace, live.name) in keep:
                continue
            try:
                if not dry_run:
                    entry.delete(client, live.namespace, live.name)
            except VGlobalError as exc:
                what = named(kind, live.namespace, live.name)
                err_console.print(f"[red]error:[/red] pruning {what}: {exc}", highlight=False)
                ok = False
                continue
            suffix = " (dry run)" if dry_run else ""
            console.print(f"{named(kind, live.namespace, live.name)} pruned{suffix}", highlight=False)
    return ok
