"""Reading manifests for `vglobal apply`: files or directories of multi-document YAML or JSON."""

from __future__ import annotations

import json
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


def files_of(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    if not path.exists():
        raise DocumentError(f"{path}: no such file or directory")
    return [path]


def read_documents(path: Path) -> list[Document]:
    docs: list[Document] = []
    for f in files_of(path):
        try:
            loaded = list(yaml.load_all(f.read_text(), Loader=SAFE_LOADER))
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
                    source=f"{f}#{i}",
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
