"""tests/kind runs only where a Docker engine and the kind and kubectl binaries are there; anywhere
else every test in it is skipped with the reason (shown by `pytest -ra`, which the project's
pytest options turn on)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@functools.cache
def missing() -> str | None:
    """Why the kind suite cannot run here, or None."""
    for tool in ("docker", "kind", "kubectl"):
        if shutil.which(tool) is None:
            return f"no {tool} binary on PATH"
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return "no Docker engine (docker info timed out)"
    if info.returncode != 0:
        last = (info.stderr.strip().splitlines() or ["docker info failed"])[-1]
        return f"no Docker engine ({last})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if item.path.is_relative_to(HERE)]
    if not ours:
        return
    reason = missing()
    for item in ours:
        item.add_marker(pytest.mark.kind)
        # One worker runs the whole suite: its clusters and hub are shared, module-scoped.
        item.add_marker(pytest.mark.xdist_group("kind"))
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"kind suite: {reason}"))
