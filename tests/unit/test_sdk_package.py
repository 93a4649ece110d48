"""The SDK is one package: the import paths users wrote before (vglobal.client, vglobal.aio) give
the same objects; a per-call token never goes out in plaintext to another host; one ``age`` for the
CLI's rows and the dashboard's."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

import vglobal.aio
import vglobal.client
import vglobal.sdk
from vglobal.api.v1 import common_pb2
from vglobal.dial import DialError
from vglobal.sdk import rows


def test_the_old_import_paths_are_the_sdk() -> None:
    from vglobal.aio import AsyncClient
    from vglobal.client import Client, JobWatch, VGlobalError

    assert Client is vglobal.sdk.Client and Client.__module__ == "vglobal.sdk.client"
    assert AsyncClient is vglobal.sdk.AsyncClient and AsyncClient.__module__ == "vglobal.sdk.aio"
    assert VGlobalError is vglobal.sdk.VGlobalError and JobWatch is vglobal.sdk.JobWatch
    for name in vglobal.client.__all__:
        assert getattr(vglobal.client, name) is getattr(vglobal.sdk, name), name
    assert vglobal.aio.OWN_TOKEN is vglobal.sdk.aio.OWN_TOKEN


def test_a_callers_token_goes_in_plaintext_only_to_a_loopback_hub() -> None:
    async def run() -> None:
        async with vglobal.sdk.AsyncClient("10.0.0.1:50051", token=None) as far:
            assert far.with_token(None)._metadata == ()
            with pytest.raises(DialError, match=r"plaintext to 10\.0\.0\.1:50051"):
                far.with_token("secret")
        async with vglobal.sdk.AsyncClient("127.0.0.1:50051", token="own") as near:
            view = near.with_token("theirs")
            assert view._metadata == (("authorization", "Bearer theirs"),)
            assert near._metadata == (("authorization", "Bearer own"),) and view.channel is near.channel

    asyncio.run(run())


def test_one_age_for_timestamps_datetimes_and_text() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    then = now - timedelta(hours=5, minutes=59)
    stamp = Timestamp()
    stamp.FromDatetime(then)
    for value in (stamp, then, then.isoformat()):
        assert rows.age(value, now) == rows.age(value, now.timestamp()) == "5h"
    assert [rows.age(now - timedelta(seconds=s), now) for s in (0, 59, 60, 86400 * 3)] == ["0s", "59s", "1m", "3d"]
    assert [rows.age(v) for v in (None, "", Timestamp())] == ["", "", ""]
    assert rows.age(None, unset="-") == "-"
    assert rows.age(now + timedelta(seconds=9), now) == "0s"  # a clock a little ahead is not negative


def test_one_quantities_in_name_order() -> None:
    rl = common_pb2.ResourceList(quantities={"nvidia.com/gpu": "1", "cpu": "2", "memory": "4Gi"})
    assert list(rows.quantities(rl)) == ["cpu", "memory", "nvidia.com/gpu"]


def test_the_dashboards_gateway_is_the_sdk_client_without_a_token_of_its_own() -> None:
    from vglobal.dashboard.gateway import Gateway
    from vglobal.dial import Dial

    async def run() -> None:
        with pytest.raises(DialError, match="refusing to send callers' tokens in plaintext"):
            Gateway(Dial("10.0.0.1:50051"))
        gateway = Gateway(Dial("127.0.0.1:50051", token="the-dashboards-own"))
        try:
            assert isinstance(gateway, vglobal.sdk.AsyncClient)
            assert gateway._metadata == () and gateway.dial.token is None
            assert gateway.with_token("a-callers")._metadata == (("authorization", "Bearer a-callers"),)
        finally:
            await gateway.close()

    asyncio.run(run())


def test_a_watch_event_prints_its_type_by_name_and_compares_to_the_api() -> None:
    from vglobal.api.v1 import jobs_pb2

    msg = jobs_pb2.JobEvent(type=jobs_pb2.JobEvent.MODIFIED, revision=7, job=jobs_pb2.Job(name="a"))
    ev = vglobal.sdk.JobEvent.of(msg)
    # What the README's watch loop prints: the name, not the enum's number.
    assert f"{ev.revision} {ev.type} {ev.job.name}" == "7 MODIFIED a" and str(ev.type) == "MODIFIED"
    assert f"{ev.type:<9}|" == "MODIFIED |"
    assert ev.type == jobs_pb2.JobEvent.MODIFIED and ev.type is vglobal.sdk.EventType.MODIFIED
    assert {int(t) for t in vglobal.sdk.EventType} == set(jobs_pb2.JobEvent.Type.values())
