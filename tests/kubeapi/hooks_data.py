"""ConfigMaps, Secrets and PersistentVolumeClaims as the API server validates them: keys, base64
values, a Secret's stringData merged into data on write, ``immutable`` objects and a Secret's type
that no update may change, a claim Pending until it names a volume."""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any

from tests.kubeapi.status import invalid

if TYPE_CHECKING:
    from tests.kubeapi.crud import Api

Obj = dict[str, Any]
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
MAX_BYTES = 1_048_576


def _causes(kind: str, obj: Obj) -> list[tuple[str, str, str]]:
    causes = []
    fields = ("data", "binaryData") if kind == "ConfigMap" else ("data",)
    seen: set[str] = set()
    size = 0
    for f in fields:
        for key, value in (obj.get(f) or {}).items():
            if not _KEY.match(key) or key in (".", ".."):
                causes.append(
                    (
                        f"{f}[{key}]",
                        "FieldValueInvalid",
                        f'Invalid value: "{key}": a valid config key must consist of alphanumeric '
                        "characters, '-', '_' or '.'",
                    )
                )
            if key in seen:
                causes.append(
                    (f"{f}[{key}]", "FieldValueInvalid", f'Invalid value: "{key}": duplicate of key')
                )
            seen.add(key)
            if f == "binaryData" or kind == "Secret":
                try:
                    size += len(base64.b64decode(value, validate=True))
                except (binascii.Error, ValueError, TypeError):
                    causes.append((f"{f}[{key}]", "FieldValueInvalid", "Invalid value: illegal base64 data"))
            else:
                size += len(str(value))
    if size > MAX_BYTES:
        causes.append(("data", "FieldValueTooLong", f"Too long: must have at most {MAX_BYTES} bytes"))
    return causes


class DataHooks:
    """ConfigMaps and Secrets."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _check(self, obj: Obj) -> Obj:
        if self.kind == "Secret":
            string_data = obj.get("stringData") or {}
            merged = {
                **(obj.get("data") or {}),
                **{k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()},
            }
            obj = {k: v for k, v in obj.items() if k != "stringData"}
            obj["data"] = merged
            obj.setdefault("type", "Opaque")
        causes = _causes(self.kind, obj)
        if causes:
            raise invalid(self.kind, obj["metadata"]["name"], causes)
        return obj

    def on_create(self, api: Api, obj: Obj) -> Obj:
        return self._check(obj)

    def on_update(self, api: Api, old: Obj, new: Obj) -> Obj:
        new = self._check(new)
        name = old["metadata"]["name"]
        if old.get("immutable"):
            changed = any(old.get(f) != new.get(f) for f in ("data", "binaryData", "immutable"))
            if changed:
                raise invalid(
                    self.kind,
                    name,
                    [
                        (
                            "data",
                            "FieldValueForbidden",
                            "Forbidden: field is immutable when `immutable` is set",
                        )
                    ],
                )
        if self.kind == "Secret" and old.get("type") != new.get("type"):
            raise invalid(
                self.kind, name, [("type", "FieldValueInvalid", "Invalid value: field is immutable")]
            )
        return new

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        return 0


class ClaimHooks:
    """A claim is Pending until it names a volume (no provisioner here); status writes may bind it."""

    def on_create(self, api: Api, obj: Obj) -> Obj:
        spec = obj.get("spec") or {}
        return {**obj, "status": {"phase": "Bound" if spec.get("volumeName") else "Pending"}}

    def on_update(self, api: Api, old: Obj, new: Obj) -> Obj:
        return new

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        return 0
