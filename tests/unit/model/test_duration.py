"""Go-style durations, as used by policy timeouts and the sim annotations."""

from __future__ import annotations

import pytest

from vglobal.model.duration import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("3s", 3.0),
        ("2m", 120.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("1m30.5s", 90.5),
        ("0", 0.0),
        ("250us", 0.00025),
        ("-5s", -5.0),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "3x", "s", "1h 30m", "h1", "1.5.1s", "--1s"])
def test_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
