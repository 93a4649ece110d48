"""What a request becomes before its handler sees it: parsed, or a marker the guard refuses with
INVALID_ARGUMENT naming what is wrong (a message that does not parse, a string holding NUL)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from vglobal.hub.errors import HubError


@dataclass(frozen=True)
class Undecodable:
    """What a request that does not parse becomes, so the handler can refuse it."""

    type_name: str


@dataclass(frozen=True)
class HoldsNul:
    """What a request with a NUL in a string field becomes: PostgreSQL cannot store it."""

    field: str


class BadRequest(HubError):
    code = grpc.StatusCode.INVALID_ARGUMENT


def safe_deserializer(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None
    owner = getattr(deserialize, "__self__", None)
    type_name = getattr(getattr(owner, "DESCRIPTOR", None), "full_name", "the request message")

    def parse(data: bytes) -> Any:
        try:
            msg = deserialize(data)
        except Exception:
            return Undecodable(type_name)
        # A NUL in a string is a zero byte on the wire: a request without one (a submit's
        # manifests, mostly) needs no walk over its fields.
        if b"\x00" in data and isinstance(msg, Message) and (field := nul_field(msg)):
            return HoldsNul(field)
        return msg

    return parse


_STRING, _STRINGS, _MESSAGE, _MESSAGES, _MAP = range(5)
# Per message type, its fields that may hold a string, in field-number order: (name, kind).
_PLANS: dict[Any, tuple[tuple[str, int], ...]] = {}


def _plan(descriptor: Any) -> tuple[tuple[str, int], ...]:
    plan = []
    for f in sorted(descriptor.fields, key=lambda f: f.number):
        if f.message_type is None:
            if f.type == f.TYPE_STRING:
                plan.append((f.name, _STRINGS if f.is_repeated else _STRING))
        elif f.message_type.GetOptions().map_entry:
            plan.append((f.name, _MAP))
        else:
            plan.append((f.name, _MESSAGES if f.is_repeated else _MESSAGE))
    _PLANS[descriptor] = out = tuple(plan)
    return out


def nul_field(msg: Message) -> str | None:
    """The path of the first string field (or map key) holding a NUL character, which PostgreSQL
    cannot store; None when there is none. Every agent report holds zero bytes (its numbers), so
    this walk runs on each: it reads only the fields that may hold strings, by a plan made once
    per message type, and builds a path only for the field found."""
    plan = _PLANS.get(msg.DESCRIPTOR)
    if plan is None:
        plan = _plan(msg.DESCRIPTOR)
    for name, kind in plan:
        if kind == _STRING:
            if "\x00" in getattr(msg, name):
                return name
        elif kind == _MESSAGES:
            for i, item in enumerate(getattr(msg, name)):
                if found := nul_field(item):
                    return f"{name}[{i}].{found}"
        elif kind == _MESSAGE:
            if msg.HasField(name) and (found := nul_field(getattr(msg, name))):
                return f"{name}.{found}"
        elif kind == _STRINGS:
            if any("\x00" in item for item in getattr(msg, name)):
                return name
        else:
            value = getattr(msg, name)
            for key in value:
                item = value[key]
                if (isinstance(key, str) and "\x00" in key) or (isinstance(item, str) and "\x00" in item):
                    return f"{name}[{key!r}]"
                if isinstance(item, Message) and (found := nul_field(item)):
                    return f"{name}[{key!r}].{found}"
    return None


def refuse_undecodable(request: Any) -> None:
    if isinstance(request, Undecodable):
        raise BadRequest(
            f"request: not a valid {request.type_name} (truncated, malformed, or a string that is not UTF-8)"
        )
    if isinstance(request, HoldsNul):
        raise BadRequest(f"{request.field}: contains the NUL character")
