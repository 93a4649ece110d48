"""Label and field selectors with the apiserver's syntax and matching rules."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tests.kubeapi.status import bad_request

_SET_OP = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\((.*)\)|(==|=|!=|>|<)\s*(.*?))?\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # exists, !exists, =, !=, in, notin, >, <
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            have, want = int(str(value)), int(next(iter(self.values)))
        except ValueError:
            return False
        return have > want if self.op == ">" else have < want


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (p.strip() for p in parts) if p]


def parse_labels(text: str) -> tuple[Requirement, ...]:
    out = []
    for part in _split_top(text or ""):
        m = _SET_OP.match(part)
        if m is None:
            raise bad_request(f"unable to parse requirement: found '{part}', expected: identifier")
        bang, key, set_op, set_values, op, value = m.groups()
        if bang:
            if set_op or op:
                raise bad_request(f"unable to parse requirement: found '{part}', expected: identifier")
            out.append(Requirement(key, "!exists"))
        elif set_op:
            values = frozenset(v.strip() for v in set_values.split(",") if v.strip())
            out.append(Requirement(key, set_op, values))
        elif op:
            out.append(Requirement(key, "=" if op == "==" else op, frozenset({value.strip()})))
        else:
            out.append(Requirement(key, "exists"))
    return tuple(out)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _split_escaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def parse_fields(text: str, supported: frozenset[str]) -> tuple[tuple[str, bool, str], ...]:
    """(field, equal?, value) triples; a field the resource does not index is a 400, as on a real server."""
    out = []
    for part in _split_escaped(text or "", ","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+?)\s*(==|!=|=)\s*(.*)$", part)
        if m is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3))
        if field not in supported:
            raise bad_request(f"field label not supported: {field}")
        out.append((field, op != "!=", value))
    return tuple(out)


def field_value(obj: Mapping[str, object], path: str) -> str:
    cur: object = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True, slots=True)
class Selector:
    """Both selectors of one request; ``matches`` on a stored object."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[tuple[str, bool, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: Mapping[str, object]) -> bool:
        if self.empty:
            return True
        meta = obj.get("metadata")
        labels = (meta.get("labels") if isinstance(meta, Mapping) else None) or {}
        assert isinstance(labels, Mapping)
        if not all(r.matches(labels) for r in self.labels):
            return False
        return all((field_value(obj, f) == v) == eq for f, eq, v in self.fields)


def selector_from_query(query: Mapping[str, str], supported_fields: frozenset[str]) -> Selector:
    return Selector(
        parse_labels(query.get("labelSelector", "")),
        parse_fields(query.get("fieldSelector", ""), supported_fields),
    )


Matcher = Callable[[Mapping[str, object]], bool]
