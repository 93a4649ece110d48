"""The Python SDK: a typed client over the gRPC stubs, with one error type.

from vglobal.client import Client
with Client("hub.example.com:50051", ca_file="certs/ca.crt", token=os.environ["VGLOBAL_TOKEN"]) as hub:
    job = hub.submit_job(open("job.yaml").read(), request_id="nightly-42")
    print(hub.explain_job(job.name).reason)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import grpc
from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from vglobal.api.v1 import (
    clusters_pb2,
    clusters_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.batches import BATCH_SIZE, batches
from vglobal.dial import DEFAULT_HUB, Dial, DialError

__all__ = ["DEFAULT_HUB", "Client", "Dial", "DialError", "VGlobalError", "default_hub"]
T = TypeVar("T")


class VGlobalError(Exception):
    """A failed call: ``code`` is the gRPC status code, the message is the hub's."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def retry_after(exc: BaseException | None) -> float | None:
    """The delay a rate-limited call was told to wait (RESOURCE_EXHAUSTED with ``retry-after-ms``)."""
    if not isinstance(exc, grpc.RpcError) or exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    trailers = getattr(exc, "trailing_metadata", lambda: None)() or ()
    for key, value in trailers:
        if key == "retry-after-ms" and str(value).isdigit():
            return int(value) / 1000
    return None


def _retryable(exc: BaseException) -> bool:
    if retry_after(exc) is not None:
        return True
    return isinstance(exc, grpc.RpcError) and exc.code() in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    )


def _wait(state: RetryCallState) -> float:
    """The hub's own delay after a rate limit (at most 10 s), else jittered exponential back-off."""
    told = retry_after(state.outcome.exception()) if state.outcome is not None else None
    return min(told, 10.0) if told is not None else _BACKOFF(state)


_BACKOFF = wait_exponential_jitter(multiplier=0.2, max=3.0)


def default_hub() -> str:
    return Dial.from_env().target


class Client:
    """The hub's API. TLS files and token default to VGLOBAL_CA_FILE, VGLOBAL_CERT, VGLOBAL_KEY and
    VGLOBAL_TOKEN (or VGLOBAL_TOKEN_FILE); ``dial`` gives them all at once instead."""

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
        def path(p: str | Path | None) -> Path | None:
            return Path(p) if p is not None else None

        self.dial = dial or Dial.from_env(
            hub, ca_file=path(ca_file), cert=path(cert), key=path(key), token=token
        )
        self.target = self.dial.target
        self.timeout = timeout
        self.retries = retries
        self.channel = self.dial.channel(options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
        self.jobs = jobs_pb2_grpc.JobServiceStub(self.channel)
        self.queues = queues_pb2_grpc.QueueServiceStub(self.channel)
        self.clusters = clusters_pb2_grpc.ClusterServiceStub(self.channel)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, fn: Callable[..., T], request: Any, *, idempotent: bool = True) -> T:
        attempts = self.retries if idempotent else 1

        @retry(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(max(1, attempts)),
            wait=_wait,
            reraise=True,
        )
        def once() -> T:
            return fn(request, timeout=self.timeout)

        try:
            return once()
        except grpc.RpcError as exc:
            raise VGlobalError(exc.code(), exc.details() or str(exc)) from None

    # Jobs
    def submit_job(self, manifest: str, *, request_id: str = "") -> jobs_pb2.SubmitJobResponse:
        # Safe to retry only with a request_id: the hub then returns the first submission.
        return self._call(
            self.jobs.SubmitJob,
            jobs_pb2.SubmitJobRequest(manifest=manifest, request_id=request_id),
            idempotent=bool(request_id),
        )

    def submit_jobs(self, items: list[tuple[str, str]]) -> jobs_pb2.SubmitJobsResponse:
        reqs = [jobs_pb2.SubmitJobRequest(manifest=m, request_id=r) for m, r in items]
        return self._call(
            self.jobs.SubmitJobs, jobs_pb2.SubmitJobsRequest(jobs=reqs), idempotent=all(r for _, r in items)
        )

    def submit_many(
        self,
        items: Iterable[tuple[str, str]],
        *,
        batch_size: int = BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> list[jobs_pb2.SubmitJobResponse]:
        """Submit (manifest, request_id) pairs in SubmitJobs calls of ``batch_size``, in order;
        ``progress`` hears how many jobs each stored call took. A batch is stored whole or not at
        all: on an error, the batches before it are stored (give request ids, and submitting the
        same items again returns those jobs instead of storing them twice)."""
        out: list[jobs_pb2.SubmitJobResponse] = []
        for batch in batches(items, size=batch_size):
            out.extend(self.submit_jobs(batch).results)
            if progress is not None:
                progress(len(batch))
        return out

    def get_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return self._call(self.jobs.GetJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def list_jobs(self, **filters: str) -> list[jobs_pb2.Job]:
        return [job for page in self.job_pages(0, **filters) for job in page]

    def job_pages(self, page_size: int = 0, **filters: str) -> Iterator[list[jobs_pb2.Job]]:
        """The jobs page by page (``page_size`` 0: the hub's default), so a million of them
        need not be held at once. ``filters``: queue, namespace, phase, cluster."""
        token = ""
        while True:
            req = jobs_pb2.ListJobsRequest(
                page_token=token,
                page_size=page_size,
                queue=filters.get("queue", ""),
                namespace=filters.get("namespace", ""),
                phase=filters.get("phase", ""),
                cluster=filters.get("cluster", ""),
            )
            resp = self._call(self.jobs.ListJobs, req)
            yield list(resp.jobs)
            token = resp.next_page_token
            if not token:
                return

    def cancel_job(self, name: str, namespace: str = "default") -> jobs_pb2.Job:
        return self._call(self.jobs.CancelJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def delete_job(self, name: str, namespace: str = "default") -> jobs_pb2.DeleteJobResponse:
        return self._call(self.jobs.DeleteJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    def explain_job(self, name: str, namespace: str = "default") -> jobs_pb2.ExplainJobResponse:
        return self._call(self.jobs.ExplainJob, jobs_pb2.JobRef(name=name, namespace=namespace))

    # Queues and priority classes
    def apply_queue(self, manifest: str) -> queues_pb2.Queue:
        return self._call(self.queues.ApplyQueue, queues_pb2.ApplyRequest(manifest=manifest))

    def get_queue(self, name: str) -> queues_pb2.Queue:
        return self._call(self.queues.GetQueue, queues_pb2.QueueRef(name=name))

    def list_queues(self) -> list[queues_pb2.Queue]:
        return list(self._call(self.queues.ListQueues, queues_pb2.ListQueuesRequest()).queues)

    def delete_queue(self, name: str, *, force: bool = False) -> queues_pb2.DeleteQueueResponse:
        """Delete a queue without unfinished jobs; ``force`` also removes its finished jobs' records."""
        return self._call(self.queues.DeleteQueue, queues_pb2.DeleteQueueRequest(name=name, force=force))

    def open_queue(self, name: str) -> queues_pb2.Queue:
        return self._call(self.queues.OpenQueue, queues_pb2.QueueRef(name=name))

    def close_queue(self, name: str) -> queues_pb2.Queue:
        return self._call(self.queues.CloseQueue, queues_pb2.QueueRef(name=name))

    def apply_priority_class(self, manifest: str) -> queues_pb2.PriorityClass:
        return self._call(self.queues.ApplyPriorityClass, queues_pb2.ApplyRequest(manifest=manifest))

    # Clusters
    def list_clusters(self) -> list[clusters_pb2.Cluster]:
        return list(self._call(self.clusters.ListClusters, clusters_pb2.ListClustersRequest()).clusters)

    def get_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.GetCluster, clusters_pb2.ClusterRef(name=name))

    def cordon_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.CordonCluster, clusters_pb2.ClusterRef(name=name))

    def uncordon_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.UncordonCluster, clusters_pb2.ClusterRef(name=name))

    def drain_cluster(self, name: str) -> clusters_pb2.Cluster:
        return self._call(self.clusters.DrainCluster, clusters_pb2.ClusterRef(name=name))
