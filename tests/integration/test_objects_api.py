"""ConfigMaps and Secrets through the real gRPC API: a Secret's value is in no answer and in no
table in clear; bad objects are refused naming the field, with nothing stored; roles decide who
may apply and read them."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import sqlalchemy as sa

from tests.integration.secure_hub import SecureHub
from vglobal.aio import AsyncClient
from vglobal.client import Client, VGlobalError
from vglobal.config import HubSettings
from vglobal.hub.secret_box import generate_key
from vglobal.hub.server import Hub
from vglobal.store.tables import metadata

VALUE = "hunter2-never-shown"
SECRET = f"""
apiVersion: v1
kind: Secret
metadata: {{name: creds, namespace: ml}}
type: Opaque
stringData: {{token: {VALUE}}}
"""
CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: scripts, namespace: ml}
data: {run.py: "print('hello')"}
"""


@pytest.fixture
def keyed(database_url: str) -> Iterator[Client]:
    settings = HubSettings(listen="127.0.0.1:0", database_url=database_url, secret_keys=generate_key())
    hub = Hub(settings)
    hub.start()
    try:
        with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
            yield c
    finally:
        hub.shutdown()


def every_table_as_text(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        return "\n".join(
            str(row[0])
            for name in metadata.tables
            for row in conn.execute(sa.text(f"SELECT CAST(t AS text) FROM {name} t"))
        )


def test_a_secrets_value_is_in_no_answer_and_no_table_in_clear(keyed: Client, engine: sa.Engine) -> None:
    got = keyed.apply_object(SECRET)
    assert got.outcome == "created" and [(k.name, k.size) for k in got.object.keys] == [("token", len(VALUE))]
    assert keyed.apply_object(SECRET).outcome == "unchanged"
    changed = keyed.apply_object(SECRET.replace(VALUE, VALUE + "2"))
    assert changed.outcome == "configured" and changed.object.revision > got.object.revision
    keyed.apply_object(SECRET)
    assert keyed.apply_object(CONFIG).outcome == "created"

    async def listed_async() -> list[Any]:
        async with AsyncClient(keyed.dial.target, timeout=10, retries=1) as ac:
            return await ac.list_objects("Secret")

    answers = [
        keyed.get_object("Secret", "creds", "ml"),
        *keyed.list_objects(),
        *keyed.list_objects("secret", "ml"),
        *asyncio.run(listed_async()),
    ]
    encoded = base64.b64encode(VALUE.encode())
    for a in answers:
        raw = a.SerializeToString()
        assert VALUE.encode() not in raw and encoded not in raw
    config = keyed.get_object("cm", "scripts", "ml")
    assert dict(config.data) == {"run.py": "print('hello')"}  # a ConfigMap's text is no secret
    assert not keyed.list_objects("ConfigMap")[0].data  # lists show keys and sizes only

    dump = every_table_as_text(engine)
    assert "creds" in dump and VALUE not in dump and encoded.decode() not in dump
    assert VALUE.encode().hex() not in dump  # bytea prints as hex


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (SECRET.replace("stringData: {token: " + VALUE + "}", "data: {token: " + VALUE + "}"), "data.token"),
        (CONFIG.replace("name: scripts", "name: Scripts_1"), "metadata.name"),
        (CONFIG.replace("data:", "spec: {}\ndata:"), "spec: unknown field"),
        (CONFIG.replace('"print(\'hello\')"', "[1]"), "data[run.py]: must be a string"),
    ],
)
def test_bad_objects_are_refused_naming_the_field_and_nothing_is_stored(
    keyed: Client, engine: sa.Engine, manifest: str, field: str
) -> None:
    with pytest.raises(VGlobalError) as err:
        keyed.apply_object(manifest)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and field in err.value.message
    assert VALUE not in err.value.message
    assert keyed.list_objects() == []


def test_without_a_key_a_secret_is_refused_and_a_missing_object_is_not_found(client: Client) -> None:
    with pytest.raises(VGlobalError) as err:
        client.apply_object(SECRET)
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION and "--secret-keys-file" in err.value.message
    with pytest.raises(VGlobalError) as err:
        client.get_object("Secret", "creds", "ml")
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(VGlobalError) as err:
        client.delete_object("Pod", "x")
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "kind" in err.value.message


def test_viewers_read_names_and_sizes_submitters_apply_and_agents_neither(secure: SecureHub) -> None:
    with secure.client("vic") as viewer:
        with pytest.raises(VGlobalError) as err:
            viewer.apply_object(CONFIG)
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert "may not manage configmaps and secrets" in err.value.message
    with secure.client("alice") as submitter:
        assert submitter.apply_object(CONFIG).outcome == "created"
    with secure.client("vic") as viewer:
        assert [o.name for o in viewer.list_objects()] == ["scripts"]
    with Client(dial=secure.agent_dial("gpu-east"), timeout=10, retries=1) as agent:
        with pytest.raises(VGlobalError) as err:
            agent.list_objects()
        assert err.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_a_hub_started_with_a_new_key_first_reseals_every_secret_under_it(
    database_url: str, engine: sa.Engine
) -> None:
    from vglobal.hub.secret_box import SecretBox

    old, new = generate_key(), generate_key()
    for keys in (old, f"{new},{old}"):
        hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=database_url, secret_keys=keys))
        hub.start()
        try:
            with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
                c.apply_object(SECRET)
        finally:
            hub.shutdown()
    with engine.connect() as conn:
        sealed = conn.execute(sa.text("SELECT sealed FROM dependency_objects")).scalar_one()
    assert SecretBox([new.encode()]).open(bytes(sealed), what="x") == {"token": VALUE.encode()}
