"""One asyncio client, many callers, against a TLS hub with users and roles: each call carries the
token given for it (``with_token`` or ``token=``), never the client's own, and the hub's roles and
queue scopes apply to that caller alone."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from tests.integration.secure_hub import SecureHub
from tests.integration.test_auth_api import job, queue
from vglobal.aio import AsyncClient
from vglobal.api.v1 import jobs_pb2
from vglobal.sdk import VGlobalError


@pytest.fixture
def teams(secure: SecureHub) -> SecureHub:
    with secure.client("olga") as ops:
        ops.apply_queue(queue("team-a"))
        ops.apply_queue(queue("team-b"))
    return secure


async def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(VGlobalError) as err:
        await call  # type: ignore[misc]
    return err.value.code


def test_each_call_goes_as_its_own_caller_on_one_channel(teams: SecureHub) -> None:
    async def run() -> None:
        async with AsyncClient(dial=teams.dial(None), timeout=10, retries=1) as hub:
            alice, bob = hub.with_token(teams.token("alice")), hub.with_token(teams.token("bob"))
            assert alice.channel is hub.channel is bob.channel
            stored = await alice.submit_job(job("a1", "team-a"), request_id="a1")
            assert stored.job.submitted_by == "alice"
            await bob.submit_job(job("b1", "team-b"), request_id="b1")
            denied = alice.submit_job(job("a2", "team-b"))
            assert await code_of(denied) == grpc.StatusCode.PERMISSION_DENIED
            # The same calls at the same time, each with what its own caller may read.
            mine = await asyncio.gather(*(c.job_page() for c in (alice, bob, hub.with_token(teams.token("vic")))))
            assert [[j.name for j in page.jobs] for page in mine] == [["a1"], ["b1"], ["a1", "b1"]]
            # The raw call takes a token of its own; None is no credentials at all.
            listed = await hub.call(hub.jobs.ListJobs, jobs_pb2.ListJobsRequest(), teams.token("vera"))
            assert [j.name for j in listed.jobs] == ["a1"]
            anonymous = hub.call(hub.jobs.ListJobs, jobs_pb2.ListJobsRequest(), None)
            assert await code_of(anonymous) == grpc.StatusCode.UNAUTHENTICATED
            assert await code_of(hub.get_job("a1")) == grpc.StatusCode.UNAUTHENTICATED
            cancel = hub.call(hub.jobs.CancelJob, jobs_pb2.JobRef(name="a1"), teams.token("vic"))
            assert await code_of(cancel) == grpc.StatusCode.PERMISSION_DENIED
            assert (await alice.cancel_job("a1")).name == "a1"

    asyncio.run(run())


def test_a_view_without_a_token_drops_the_clients_own(teams: SecureHub) -> None:
    async def run() -> None:
        async with AsyncClient(dial=teams.dial("ada"), timeout=10, retries=1) as ada:
            await ada.submit_job(job("a1", "team-a"), request_id="a1")
            assert [j.name async for j in ada.list_jobs()] == ["a1"]  # its own token
            assert await code_of(ada.with_token(None).get_job("a1")) == grpc.StatusCode.UNAUTHENTICATED
            bob = ada.call(ada.jobs.GetJob, jobs_pb2.JobRef(name="a1"), teams.token("bob"))
            assert await code_of(bob) == grpc.StatusCode.PERMISSION_DENIED
            assert (await ada.get_job("a1")).queue == "team-a"  # the view changed nothing of ada's

    asyncio.run(run())


def test_a_watch_goes_as_its_caller(teams: SecureHub) -> None:
    async def run() -> None:
        async with AsyncClient(dial=teams.dial(None), timeout=10, retries=1) as hub:
            await hub.with_token(teams.token("bob")).submit_job(job("b1", "team-b"), request_id="b1")
            await hub.with_token(teams.token("alice")).submit_job(job("a1", "team-a"), request_id="a1")
            request = jobs_pb2.WatchJobsRequest(from_revision=0)
            seen: set[str] = set()
            async for event in hub.watch(request, teams.token("vera")):
                if event.type == jobs_pb2.JobEvent.BOOKMARK:
                    continue
                seen.add(event.job.name)
                if event.job.name == "a1":
                    break
            assert seen == {"a1"}  # b1 came first in the log, and vera (team-a*) may not see it
            with pytest.raises(VGlobalError) as err:
                async for _ in hub.watch(request, None):
                    pass
            assert err.value.code == grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(run())
