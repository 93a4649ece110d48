"""Secrets at rest: a v1 Secret's values are sealed with Fernet (AES-128-CBC and HMAC-SHA256)
under the keys the hub is given (--secret-keys-file, or VGLOBAL_SECRET_KEYS).

Rotation: the keys are a list; the first seals, every one opens. Put a new key first, restart the
hub (it re-seals every stored Secret under the first key at start, ``reseal``), then drop the old
key. A value never goes to a log: errors name the object, never its data.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


class SecretKeyError(ValueError):
    """The keys given cannot be used, or none opens a stored Secret."""


def parse_keys(text: str) -> list[bytes]:
    """Keys one a line or comma-separated; blank lines and ``#`` comments skipped."""
    keys = []
    for line in text.replace(",", "\n").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            keys.append(line.encode())
    return keys


def generate_key() -> str:
    return Fernet.generate_key().decode()


class SecretBox:
    def __init__(self, keys: list[bytes]) -> None:
        try:
            self._first = Fernet(keys[0]) if keys else None
            self._fernet = MultiFernet([Fernet(k) for k in keys]) if keys else None
        except (ValueError, TypeError):
            raise SecretKeyError(
                "secret keys: each must be 32 url-safe base64-encoded bytes (`vglobal secret-key` makes one)"
            ) from None

    @classmethod
    def from_sources(cls, keys_file: Path | None, keys: str | None) -> SecretBox:
        text = (keys_file.read_text() if keys_file is not None else "") + "\n" + (keys or "")
        return cls(parse_keys(text))

    @property
    def ready(self) -> bool:
        return self._fernet is not None

    def _need(self) -> MultiFernet:
        if self._fernet is None:
            raise SecretKeyError(
                "the hub holds no key for Secrets: start it with --secret-keys-file (or VGLOBAL_SECRET_KEYS)"
            )
        return self._fernet

    def seal(self, data: Mapping[str, bytes]) -> bytes:
        plain = json.dumps({k: base64.b64encode(v).decode() for k, v in sorted(data.items())})
        return self._need().encrypt(plain.encode())

    def open(self, sealed: bytes, *, what: str) -> dict[str, bytes]:
        try:
            plain = self._need().decrypt(bytes(sealed))
        except InvalidToken:
            raise SecretKeyError(f"{what}: none of the hub's secret keys opens it") from None
        return {k: base64.b64decode(v) for k, v in json.loads(plain).items()}

    def reseal(self, sealed: bytes, *, what: str) -> bytes | None:
        """The same values sealed under the first key; None when they already are."""
        fernet = self._need()
        try:
            assert self._first is not None
            self._first.decrypt(bytes(sealed))
            return None
        except InvalidToken:
            pass
        try:
            return fernet.rotate(bytes(sealed))
        except InvalidToken:
            raise SecretKeyError(f"{what}: none of the hub's secret keys opens it") from None
