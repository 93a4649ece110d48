"""The ``volcano_pending`` marker: a Volcano outcome vglobal does not reach yet (strict xfail)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "volcano_pending: a ported Volcano case whose outcome waits for a feature (a strict xfail: "
        "it fails once the feature lands, and then the mark goes)",
    )
