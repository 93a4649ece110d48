"""Manifest errors that name the field path of every problem."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# An error message lists this many problems at most, so it stays far below gRPC's metadata limits.
MAX_LISTED = 20
MAX_MESSAGE_BYTES = 4000


def bounded_list(items: Sequence[str], *, limit: int = MAX_LISTED, sep: str = "; ") -> str:
    """The first ``limit`` items joined by ``sep``, then "and N more" for the rest."""
    shown = sep.join(items[:limit])
    rest = len(items) - limit
    return f"{shown}{sep}and {rest} more" if rest > 0 else shown


def clip_message(text: str, *, max_bytes: int = MAX_MESSAGE_BYTES) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8 (a "..." marks the cut), for status messages."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= max_bytes:
        return text
    return data[: max_bytes - 3].decode("utf-8", errors="ignore") + "..."


def key_path(field: str, key: str) -> str:
    """``field.key``, or ``field[key]`` for a key with "." or "/" (``annotations[vglobal.io/clusters]``)."""
    if not field:
        return key
    return f"{field}[{key}]" if ("." in key or "/" in key) else f"{field}.{key}"


def path_of(loc: Iterable[object], prefix: str = "") -> str:
    """pydantic's ``loc`` ("spec", "tasks", 0, "replicas") as "spec.tasks[0].replicas"."""
    out = prefix
    for part in loc:
        out = f"{out}[{part}]" if isinstance(part, int) else key_path(out, str(part))
    return out


class ManifestError(ValueError):
    """One or more problems in a manifest; ``field``/``message`` describe the first."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        if not problems:
            raise ValueError("a ManifestError needs at least one problem")
        self.problems = tuple(problems)
        self.field, self.message = self.problems[0]
        # Which document of a multi-document text it is about, e.g. 'document[2] (Job "train")'.
        self.document: str | None = None
        super().__init__(str(self))

    def __str__(self) -> str:
        text = bounded_list([f"{f}: {m}" if f else m for f, m in self.problems])
        return clip_message(f"{self.document}: {text}" if self.document else text)

    @classmethod
    def one(cls, field: str, message: str) -> ManifestError:
        return cls([(field, message)])


class Problems:
    """Collects problems while validating; ``raise_if_any`` raises them together."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, message: str) -> None:
        self.items.append((field, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ManifestError(self.items)


class ManifestTooLarge(ManifestError):
    """The manifest text is over the size limit (the hub maps it to RESOURCE_EXHAUSTED)."""
