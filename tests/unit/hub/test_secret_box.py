"""Secrets at rest: sealed under the first key, opened by any, re-sealed on rotation; a wrong or
malformed key is an error that shows no value."""

from __future__ import annotations

from pathlib import Path

import pytest

from vglobal.hub.secret_box import SecretBox, SecretKeyError, generate_key, parse_keys

VALUE = b"hunter2-do-not-print"


def test_sealed_values_hold_no_clear_text_and_open_again() -> None:
    box = SecretBox([generate_key().encode()])
    sealed = box.seal({"token": VALUE})
    assert VALUE not in sealed and b"aHVudGVyMi" not in sealed  # nor its base64
    assert box.open(sealed, what="secret/default/s") == {"token": VALUE}
    assert box.seal({"token": VALUE}) != sealed  # a fresh IV each time


def test_rotation_a_new_key_first_opens_the_old_and_reseals_under_the_new(tmp_path: Path) -> None:
    old, new = generate_key(), generate_key()
    sealed = SecretBox([old.encode()]).seal({"k": VALUE})
    keys = tmp_path / "keys"
    keys.write_text(f"# newest first\n{new}\n{old}\n")
    rotated = SecretBox.from_sources(keys, None)
    again = rotated.reseal(sealed, what="secret/default/s")
    assert again is not None and SecretBox([new.encode()]).open(again, what="x") == {"k": VALUE}
    assert rotated.reseal(again, what="x") is None  # under the first key already: left alone
    with pytest.raises(SecretKeyError, match="secret/default/s: none of the hub's secret keys opens it"):
        SecretBox([new.encode()]).open(sealed, what="secret/default/s")


def test_keys_from_the_environment_add_to_the_file_and_bad_ones_are_refused() -> None:
    assert parse_keys("a, b\n#c\n d ") == [b"a", b"b", b"d"]
    with pytest.raises(SecretKeyError, match="32 url-safe base64-encoded bytes"):
        SecretBox([b"not-a-key"])
    with pytest.raises(SecretKeyError, match="--secret-keys-file"):
        SecretBox([]).seal({"k": VALUE})
