"""An in-process hub on a fresh database, reached over a real gRPC socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.integration.secure_hub import secure  # noqa: F401  (a fixture: a TLS hub with users and agents)
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.server import Hub
from vglobal.store.engine import make_engine
from vglobal.store.locks import AdvisoryLock, try_session_lock


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


@pytest.fixture
def follower(database_url: str) -> Iterator[tuple[Hub, sa.Engine]]:
    """A hub that serves the API and the agents while another replica leads (the test holds the
    leader's lock): it never dispatches, so what it writes of a waiting job stays to be seen."""
    engine = make_engine(database_url, pool_size=2)
    hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.1))
    with engine.connect() as leader:
        assert try_session_lock(leader, AdvisoryLock.HUB_LEADER)
        hub.start()
        try:
            yield hub, engine
        finally:
            hub.shutdown()
    engine.dispose()
