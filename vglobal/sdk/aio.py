"""The Python SDK for asyncio: the job calls of ``Client`` as coroutines on one grpc.aio channel.

from vglobal.sdk import AsyncClient
async with AsyncClient("hub.example.com:50051", ca_file="certs/ca.crt", token=token) as hub:
    results = await hub.submit_many([(manifest, f"sweep-{i}") for i, manifest in enumerate(sweep)])
    async for job in hub.list_jobs(queue="research"):
        print(job.name, job.phase)
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import grpc
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from vglobal.api.v1 import (
    clusters_pb2_grpc,
    cronjobs_pb2_grpc,
    hyperjobs_pb2,
    hyperjobs_pb2_grpc,
    jobflows_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    objects_pb2,
    objects_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.dial import CLIENT_OPTIONS, Dial
from vglobal.sdk.applying import apply_request, scale_request
from vglobal.sdk.batches import BATCH_SIZE, batches
from vglobal.sdk.errors import hub_error
from vglobal.sdk.job_filters import Filter, count_request, history_request, list_request
from vglobal.sdk.logs import LogLine, logs_request, stream_lines
from vglobal.sdk.retries import refused, retryable, wait_retry

__all__ = ["OWN_TOKEN", "AsyncClient"]
T = TypeVar("T")


class _Own(Enum):
    TOKEN = "the client's own token"


OWN_TOKEN = _Own.TOKEN
"""``token=`` left as it is: the call carries the client's own token."""


def _bearer(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


class AsyncClient:
    """Arguments as for ``Client``; use ``async with`` or ``await close()``.

    The token goes with each call rather than into the channel, so one channel serves many callers:
    ``with_token(token)`` is this client as another caller, and ``call`` and ``watch`` take a
    ``token`` of their own."""

    def __init__(
        self,
        hub: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        ca_file: str | Path | None = None,
        cert: str | Path | None = None,
        key: str | Path | None = None,
        token: str | None = None,
        dial: Dial | None = None,
    ) -> None:
        self.dial = Dial.for_client(hub, dial=dial, ca_file=ca_file, cert=cert, key=key, token=token)
        self.dial.check()
        self.timeout = timeout
        self.retries = retries
        self.channel = replace(self.dial, token=None).aio_channel(options=CLIENT_OPTIONS)
        self._metadata = _bearer(self.dial.token)
        self.jobs = jobs_pb2_grpc.JobServiceStub(self.channel)
        self.queues = queues_pb2_grpc.QueueServiceStub(self.channel)
        self.clusters = clusters_pb2_grpc.ClusterServiceStub(self.channel)
        self.cronjobs = cronjobs_pb2_grpc.CronJobServiceStub(self.channel)
        self.jobflows = jobflows_pb2_grpc.JobFlowServiceStub(self.channel)
        self.hyperjobs = hyperjobs_pb2_grpc.HyperJobServiceStub(self.channel)
        self.objects = objects_pb2_grpc.ObjectServiceStub(self.channel)

    def with_token(self, token: str | None) -> AsyncClient:
        """This client calling as the holder of ``token`` (None: with no credentials), on the same
        channel; closing either closes both. A token is sent in plaintext only to a loopback hub."""
        dial = replace(self.dial, token=token)
        dial.check()
        view = copy.copy(self)
        view.dial, view._metadata = dial, _bearer(token)
        return view

    def _as(self, token: str | _Own | None) -> AsyncClient:
        return self if token is OWN_TOKEN else self.with_token(token)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    async def call(
        self,
        fn: Callable[..., Awaitable[T]],
        request: Any,
        token: str | _Own | None = OWN_TOKEN,
        *,
        idempotent: bool = True,
    ) -> T:
        """One call of a stub's unary method (``client.clusters.GetCluster``, ...) as the typed calls
        make it: the timeout, retries (``idempotent=False``: none, e.g. a SubmitJob without a
        request id), ``VGlobalError`` on failure; as ``token``'s holder when given (None: with no
        credentials)."""
        return await self._as(token)._call(fn, request, idempotent=idempotent)

    async def watch(
        self, request: jobs_pb2.WatchJobsRequest, token: str | _Own | None = OWN_TOKEN
    ) -> AsyncIterator[jobs_pb2.JobEvent]:
        """The events of one WatchJobs stream until it ends; the caller opens it again from the
        last revision seen (``Client.watch_jobs`` does that itself)."""
        stream = self.jobs.WatchJobs(request, metadata=self._as(token)._metadata)
        try:
            async for event in stream:
                yield event
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise hub_error(exc) from None
        finally:
            stream.cancel()

    async def _call(self, fn: Callable[..., Awaitable[T]], request: Any, *, idempotent: bool = True) -> T:
        # A call that is not idempotent is sent again only when the hub refused it unread.
        again = retryable if idempotent else refused
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(again),
                stop=stop_after_attempt(max(1, self.retries)),
                wait=wait_retry,
                reraise=True,
            ):
                with attempt:
                    return await fn(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            raise hub_error(exc) from None
        raise AssertionError("unreachable: the last attempt raises")

    async def submit_job(self, manifest: str, *, request_id: str = "") -> jobs_pb2.SubmitJobResponse:
        request = jobs_pb2.SubmitJobRequest(manifest=manifest, request_id=request_id)
        return await self._call(self.jobs.SubmitJob, request, idempotent=bool(request_id))

    async def submit_jobs(self, items: list[tuple[str, str]]) -> jobs_pb2.SubmitJobsResponse:
        reqs = [jobs_pb2.SubmitJobRequest(manifest=m, request_id=r) for m, r in items]
        return await self._call(
            self.jobs.SubmitJobs, jobs_pb2.SubmitJobsRequest(jobs=reqs), idempotent=all(r for _, r in items)
        )

    async def submit_many(
        self, items: Iterable[tuple[str, str]], *, batch_size: int = BATCH_SIZE, concurrency: int = 4
    ) -> list[jobs_pb2.SubmitJobResponse]:
        """``Client.submit_many`` with up to ``concurrency`` SubmitJobs calls in flight; the
        results in the order of ``items``. On an error the other calls in flight finish first."""
        gate = asyncio.Semaphore(concurrency)

        async def one(batch: list[tuple[str, str]]) -> list[jobs_pb2.SubmitJobResponse]:
            async with gate:
                return list((await self.submit_jobs(batch)).results)

        parts = await asyncio.gather(*(one(b) for b in batches(items, size=batch_size)))
        return [r for part in parts for r in part]

    async def get_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return await self._call(self.jobs.GetJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    async def apply_job(self, manifest: str, **options: Any) -> jobs_pb2.ApplyJobResponse:
        """``Client.apply_job``."""
        return await self._call(self.jobs.ApplyJob, apply_request(manifest, **options), idempotent=True)

    async def scale_job(
        self, name: str, replicas: int, namespace: str = "default", *, task: str = "", dry_run: bool = False
    ) -> jobs_pb2.ApplyJobResponse:
        """``Client.scale_job``."""
        request = scale_request(await self.get_job(name, namespace), replicas, task, dry_run)
        return await self._call(self.jobs.ApplyJob, request, idempotent=True)

    async def list_jobs(
        self, page_size: int = 0, *, labels: Mapping[str, str] | None = None, **query: Filter
    ) -> AsyncIterator[jobs_pb2.Job]:
        """Every job that matches, a page at a time; ``query`` as ``Client.list_jobs``."""
        token = ""
        while True:
            resp = await self.job_page(page_size, token, labels=labels, **query)
            for job in resp.jobs:
                yield job
            token = resp.next_page_token
            if not token:
                return

    async def job_page(
        self,
        page_size: int = 0,
        page_token: str = "",
        *,
        labels: Mapping[str, str] | None = None,
        **query: Filter,
    ) -> jobs_pb2.ListJobsResponse:
        """One page, as ``Client.job_page``."""
        req = list_request(page_size=page_size, page_token=page_token, labels=labels, query=query)
        return await self._call(self.jobs.ListJobs, req)

    async def count_jobs(
        self, group_by: Sequence[str] = (), *, labels: Mapping[str, str] | None = None, **filters: Filter
    ) -> jobs_pb2.CountJobsResponse:
        """As ``Client.count_jobs``."""
        return await self._call(self.jobs.CountJobs, count_request(group_by, labels=labels, filters=filters))

    async def job_dispatches(self, name: str, namespace: str = "default") -> list[jobs_pb2.JobDispatch]:
        """As ``Client.job_dispatches``."""
        ref = jobs_pb2.JobRef(name=name, namespace=namespace)
        return list((await self._call(self.jobs.ListJobDispatches, ref)).dispatches)

    async def queue_history(
        self,
        name: str = "",
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        max_samples: int = 0,
    ) -> list[queues_pb2.QueueHistory]:
        """As ``Client.queue_history``."""
        req = history_request(name, since=since, until=until, max_samples=max_samples)
        return list((await self._call(self.queues.GetQueueHistory, req)).queues)

    async def explain_job(self, name: str, namespace: str = "default") -> jobs_pb2.ExplainJobResponse:
        return await self._call(self.jobs.ExplainJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    async def logs(
        self,
        name: str,
        namespace: str = "default",
        *,
        pod: str = "",
        task: str = "",
        container: str = "",
        follow: bool = False,
        tail: int | None = None,
        since: timedelta | float | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> AsyncIterator[LogLine]:
        """As ``Client.logs``: an async iterator of (pod, text) lines."""
        request = logs_request(
            name, namespace, pod=pod, task=task, container=container, follow=follow, tail=tail,
            since=since, previous=previous, timestamps=timestamps,
        )  # fmt: skip
        async for line in stream_lines(self.jobs, request, self._metadata):
            yield line

    async def cancel_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return await self._call(self.jobs.CancelJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    async def delete_job(self, name: str, namespace: str = "default") -> jobs_pb2.DeleteJobResponse:
        return await self._call(self.jobs.DeleteJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    async def apply_object(self, manifest: str, *, dry_run: bool = False) -> objects_pb2.ApplyObjectResponse:
        """Create or update one v1 ConfigMap or Secret (as ``Client.apply_object``)."""
        req = objects_pb2.ApplyObjectRequest(manifest=manifest, dry_run=dry_run)
        return await self._call(self.objects.ApplyObject, req)

    async def list_objects(
        self, kind: str = "", namespace: str = ""
    ) -> list[objects_pb2.DependencyObjectView]:
        """ConfigMaps and Secrets: names, keys and sizes (never a Secret's values)."""
        req = objects_pb2.ListObjectsRequest(kind=kind, namespace=namespace)
        return list((await self._call(self.objects.ListObjects, req)).objects)

    async def get_hyperjob(self, name: str, namespace: str = "default") -> hyperjobs_pb2.HyperJob:
        ref = hyperjobs_pb2.HyperJobRef(name=name, namespace=namespace)
        return await self._call(self.hyperjobs.GetHyperJob, ref)

    async def list_hyperjobs(self, namespace: str = "") -> list[hyperjobs_pb2.HyperJob]:
        req = hyperjobs_pb2.ListHyperJobsRequest(namespace=namespace)
        return list((await self._call(self.hyperjobs.ListHyperJobs, req)).hyperjobs)

    async def cancel_hyperjob(self, name: str, namespace: str = "default") -> hyperjobs_pb2.HyperJob:
        """As ``Client.cancel_hyperjob``: every unfinished child Aborted, in one transaction."""
        ref = hyperjobs_pb2.HyperJobRef(name=name, namespace=namespace)
        return await self._call(self.hyperjobs.CancelHyperJob, ref)

    async def delete_hyperjob(
        self, name: str, namespace: str = "default"
    ) -> hyperjobs_pb2.DeleteHyperJobResponse:
        """As ``Client.delete_hyperjob``: every child removed, in one transaction."""
        ref = hyperjobs_pb2.HyperJobRef(name=name, namespace=namespace)
        return await self._call(self.hyperjobs.DeleteHyperJob, ref)
