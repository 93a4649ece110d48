"""A second hub started on a port another process listens on stops at once with one line naming the
port and its flag: no traceback, no database started or touched (the embedded one's data directory
is never made)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def _hub(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vglobal", "hub", *args],
        check=False, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def test_a_second_hub_on_a_busy_port_stops_before_the_database(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VGLOBAL_")}
    data = tmp_path / "hub-data"  # the embedded database's: made when the database starts
    with socket.socket() as first:  # the first hub's listener, as gRPC binds it
        first.bind(("127.0.0.1", 0))
        first.listen()
        busy = f"127.0.0.1:{first.getsockname()[1]}"
        started = time.monotonic()
        res = _hub("--listen", busy, "--data-dir", str(data), env=clean)
    assert time.monotonic() - started < 30
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.splitlines()[-1] == (
        f"Error: {busy} (--listen) is already in use: is another hub running there? Stop it, or give "
        "this one another --listen; nothing was started"
    ), res.stderr
    assert not data.exists()
