"""An in-process hub on a fresh database, reached over a real gRPC socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    settings = HubSettings(listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.2)
    h = Hub(settings)
    h.start()
    yield h
    h.shutdown()


@pytest.fixture
def client(hub: Hub) -> Iterator[Client]:
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
        yield c
