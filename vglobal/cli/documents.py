"""Reading manifests for `vglobal apply`: files, directories (their YAML and JSON files, sorted,
sub-directories included) and standard input (``-``), each multi-document YAML or JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SUFFIXES = (".yaml", ".yml", ".json")
# libyaml when built in: a folder of 10,000 manifests reads in seconds, not a minute.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DocumentError(ValueError):
    pass


@dataclass(frozen=True)
class Document:
    source: str  # "path#index"
    kind: str
    name: str
    body: dict[str, Any]

    @property
    def text(self) -> str:
        return json.dumps(self.body, sort_keys=True)


STDIN = Path("-")


def files_of(path: Path) -> list[Path]:
    if path == STDIN:
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        if not found:
            raise DocumentError(f"{path}: no .yaml, .yml or .json file in this directory")
        return found
    if not path.exists():
        raise DocumentError(f"{path}: no such file or directory")
    return [path]


def _text(f: Path) -> str:
    return sys.stdin.read() if f == STDIN else f.read_text()


def read_documents(paths: Path | Sequence[Path]) -> list[Document]:
    """The documents of every file named (``-``: standard input, read once), in the order given."""
    files = [f for path in ([paths] if isinstance(paths, Path) else paths) for f in files_of(path)]
    if files.count(STDIN) > 1:
        raise DocumentError("-: standard input can be read only once")
    docs: list[Document] = []
    for f in files:
        try:
            loaded = list(yaml.load_all(_text(f), Loader=SAFE_LOADER))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise DocumentError(f"{f}:{where}: malformed YAML: {problem}") from None
        for i, body in enumerate(loaded):
            if body is None:
                continue
            if not isinstance(body, dict):
                raise DocumentError(f"{f}#{i}: a manifest must be a mapping, got {type(body).__name__}")
            meta = body.get("metadata") or {}
            docs.append(
                Document(
                    source=f"{'<stdin>' if f == STDIN else f}#{i}",
                    kind=str(body.get("kind", "")),
                    name=str(meta.get("name", "")) if isinstance(meta, dict) else "",
                    body=body,
                )
            )
    return docs


def apply_order(docs: list[Document]) -> list[Document]:
    """PriorityClasses, then Queues parents first, then JobTemplates (JobFlows name them), then
    everything else in file order."""
    pcs = [d for d in docs if d.kind == "PriorityClass"]
    queues = [d for d in docs if d.kind == "Queue"]
    templates = [d for d in docs if d.kind == "JobTemplate"]
    rest = [d for d in docs if d.kind not in ("PriorityClass", "Queue", "JobTemplate")]
    by_name = {d.name: d for d in queues}
    ordered: list[Document] = []
    placed: set[str] = set()

    def place(d: Document, depth: int = 0) -> None:
        if d.name in placed or depth > len(queues):
            return
        parent = (d.body.get("spec") or {}).get("parent")
        if isinstance(parent, str) and parent in by_name:
            place(by_name[parent], depth + 1)
        placed.add(d.name)
        ordered.append(d)

    for q in queues:
        place(q)
    return pcs + ordered + templates + rest
