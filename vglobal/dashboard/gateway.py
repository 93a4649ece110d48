"""One channel to the hub for every caller; each call carries the caller's own bearer token."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

import grpc

from vglobal.api.v1 import (
    clusters_pb2_grpc,
    cronjobs_pb2_grpc,
    jobflows_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.client import VGlobalError
from vglobal.dial import CLIENT_OPTIONS, Dial, DialError, is_loopback

T = TypeVar("T")
TIMEOUT = 15.0


class Gateway:
    """The hub's services, called as a given caller (``token`` None: no credentials at all)."""

    def __init__(self, dial: Dial) -> None:
        dial = replace(dial, token=None)  # the dashboard's own token is never used for a caller
        if not dial.tls and not is_loopback(dial.target):
            raise DialError(
                f"refusing to send callers' tokens in plaintext to {dial.target}: give --ca-file "
                "(VGLOBAL_CA_FILE) to reach the hub over TLS"
            )
        self.dial = dial
        self.channel = dial.aio_channel(options=CLIENT_OPTIONS)
        self.jobs = jobs_pb2_grpc.JobServiceStub(self.channel)
        self.queues = queues_pb2_grpc.QueueServiceStub(self.channel)
        self.clusters = clusters_pb2_grpc.ClusterServiceStub(self.channel)
        self.cronjobs = cronjobs_pb2_grpc.CronJobServiceStub(self.channel)
        self.jobflows = jobflows_pb2_grpc.JobFlowServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    @staticmethod
    def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {token}"),) if token else ()

    async def call(self, fn: Callable[..., Awaitable[T]], request: Any, token: str | None) -> T:
        """One unary call as the caller; a failure becomes ``VGlobalError`` with the hub's message."""
        try:
            return await fn(request, timeout=TIMEOUT, metadata=self.metadata(token))
        except grpc.aio.AioRpcError as exc:
            raise VGlobalError(exc.code(), exc.details() or exc.code().name) from None

    async def watch(
        self, request: jobs_pb2.WatchJobsRequest, token: str | None
    ) -> AsyncIterator[jobs_pb2.JobEvent]:
        """The caller's job events until the stream ends (the caller reconnects)."""
        stream = self.jobs.WatchJobs(request, metadata=self.metadata(token))
        try:
            async for event in stream:
                yield event
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise VGlobalError(exc.code(), exc.details() or exc.code().name) from None
        finally:
            stream.cancel()

    async def is_open(self) -> bool:
        """Whether the hub serves callers without credentials (loopback, no auth config)."""
        try:
            await self.call(self.queues.ListQueues, queues_pb2.ListQueuesRequest(), None)
        except VGlobalError:
            return False
        return True
