"""Bearer tokens: made at random, stored only as SHA-256 hex digests, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")
TOKEN_BYTES = 32


def new_token() -> str:
    """A fresh token (43 URL-safe characters, 256 random bits)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenTable(Generic[T]):
    """Finds whose token a presented one is, without the time taken telling which entry was close.

    Every entry is compared (hmac.compare_digest on the digests), so the time depends only on how
    many entries there are.
    """

    def __init__(self, entries: Iterable[tuple[str, T]]) -> None:
        self._entries = [(bytes.fromhex(digest), owner) for digest, owner in entries]

    def find(self, token: str) -> T | None:
        presented = hashlib.sha256(token.encode("utf-8", errors="replace")).digest()
        found: T | None = None
        for digest, owner in self._entries:
            if hmac.compare_digest(digest, presented):
                found = owner
        return found
