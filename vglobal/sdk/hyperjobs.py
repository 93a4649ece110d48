"""The SDK's HyperJob calls (a HyperJob is submitted as any manifest, with ``submit_job``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from vglobal.api.v1 import hyperjobs_pb2, hyperjobs_pb2_grpc

T = TypeVar("T")


class HyperJobCalls:
    hyperjobs: hyperjobs_pb2_grpc.HyperJobServiceStub

    def _call(self, fn: Callable[..., T], request: Any, *, idempotent: bool = True) -> T:
        raise NotImplementedError  # the Client's

    def get_hyperjob(self, name: str, namespace: str = "default") -> hyperjobs_pb2.HyperJob:
        """Its phase, and each child's cluster, phase and pod counts."""
        return self._call(
            self.hyperjobs.GetHyperJob, hyperjobs_pb2.HyperJobRef(name=name, namespace=namespace)
        )

    def list_hyperjobs(self, namespace: str = "") -> list[hyperjobs_pb2.HyperJob]:
        req = hyperjobs_pb2.ListHyperJobsRequest(namespace=namespace)
        return list(self._call(self.hyperjobs.ListHyperJobs, req).hyperjobs)

    def cancel_hyperjob(self, name: str, namespace: str = "default") -> hyperjobs_pb2.HyperJob:
        """Every unfinished child becomes Aborted, in one transaction."""
        ref = hyperjobs_pb2.HyperJobRef(name=name, namespace=namespace)
        return self._call(self.hyperjobs.CancelHyperJob, ref)

    def delete_hyperjob(self, name: str, namespace: str = "default") -> hyperjobs_pb2.DeleteHyperJobResponse:
        """Every child is removed (stopped first where it runs), in one transaction."""
        ref = hyperjobs_pb2.HyperJobRef(name=name, namespace=namespace)
        return self._call(self.hyperjobs.DeleteHyperJob, ref)
