"""Fixtures for the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import System


@pytest.fixture
def system(tmp_path: Path, database_url: str) -> Iterator[System]:
    s = System(tmp=tmp_path, database_url=database_url)
    yield s
    s.stop()
