"""The three patch formats of the API: JSON merge patch, strategic merge patch, JSON patch.

Strategic merge knows the merge keys of the core types' lists (containers by name, conditions by type,
ownerReferences by uid, ...) by field name; other lists are replaced as in a merge patch.
Every function returns a new object and never changes its input.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.kubeapi.status import ApiError, bad_request, unsupported_media_type

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# list field -> candidate merge keys (the first one its elements carry is used)
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "port"),
    "conditions": ("type",),
    "addresses": ("type",),
    "ownerReferences": ("uid",),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "schedulingGates": ("name",),
    "topologySpreadConstraints": ("topologyKey",),
    "podIPs": ("ip",),
    "resourceClaims": ("name",),
}
MERGED_PRIMITIVE_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _merge_key(field: str, items: list[Any]) -> str | None:
    for key in MERGE_KEYS.get(field, ()):
        if any(isinstance(i, dict) and key in i for i in items):
            return key
    return None


def _strategic_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    base = list(current) if isinstance(current, list) else []
    if field in MERGED_PRIMITIVE_LISTS:
        return base + [v for v in patch if v not in base]
    key = _merge_key(field, patch + base)
    if key is None:
        return copy.deepcopy(patch)
    out = list(base)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"map: {item} does not contain declared merge key: {key}")
        idx = next(
            (i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]), None
        )
        directive = item.get("$patch")
        if directive == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(strategic_merge({}, item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out


def strategic_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _strategic_list(key, out.get(key), value)
        else:
            merged = strategic_merge(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        parent[last] = value
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    try:
        for op in ops:
            kind, parts = op.get("op"), _pointer(op.get("path", ""))
            if kind == "add":
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "replace":
                _walk(doc, parts)
                if not parts:
                    doc = copy.deepcopy(op["value"])
                else:
                    _remove(doc, parts)
                    doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind in ("move", "copy"):
                source = _pointer(op["from"])
                value = _remove(doc, source) if kind == "move" else copy.deepcopy(_walk(doc, source))
                doc = _add(doc, parts, value)
            elif kind == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise ApiError(
                        422,
                        "Invalid",
                        f"the server rejected our request due to an error in our request: testing value {op.get('path')} failed",
                    )
            else:
                raise bad_request(f"Unexpected kind: {kind}")
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {e!r}"
        ) from None
    return doc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any, *, custom: bool) -> Any:
    """Custom resources take no strategic merge patch (415), as on a real server."""
    media = content_type.split(";", maxsplit=1)[0].strip().lower()
    if media == MERGE:
        return merge_patch(target, patch)
    if media == STRATEGIC and not custom:
        return strategic_merge(target, patch)
    if media == JSON_PATCH:
        return json_patch(target, patch)
    raise unsupported_media_type(media)
