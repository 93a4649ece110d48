"""The SDK's calls for the ConfigMaps and Secrets jobs depend on. No answer holds a Secret's
values: its keys and their sizes only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from vglobal.api.v1 import objects_pb2, objects_pb2_grpc

T = TypeVar("T")


class ObjectCalls:
    objects: objects_pb2_grpc.ObjectServiceStub

    def _call(self, fn: Callable[..., T], request: Any, *, idempotent: bool = True) -> T:
        raise NotImplementedError  # the Client's

    def apply_object(
        self, manifest: str, *, field_validation: str = "", dry_run: bool = False
    ) -> objects_pb2.ApplyObjectResponse:
        """Create or update one v1 ConfigMap or Secret; ``outcome`` says created, configured or unchanged."""
        req = objects_pb2.ApplyObjectRequest(
            manifest=manifest, field_validation=field_validation, dry_run=dry_run
        )
        return self._call(self.objects.ApplyObject, req)

    def get_object(
        self, kind: str, name: str, namespace: str = "default"
    ) -> objects_pb2.DependencyObjectView:
        ref = objects_pb2.ObjectRef(kind=kind, namespace=namespace, name=name)
        return self._call(self.objects.GetObject, ref)

    def list_objects(self, kind: str = "", namespace: str = "") -> list[objects_pb2.DependencyObjectView]:
        req = objects_pb2.ListObjectsRequest(kind=kind, namespace=namespace)
        return list(self._call(self.objects.ListObjects, req).objects)

    def delete_object(
        self, kind: str, name: str, namespace: str = "default", *, force: bool = False
    ) -> objects_pb2.DependencyObjectView:
        """Refused (FAILED_PRECONDITION) while a running job uses it, unless ``force``."""
        ref = objects_pb2.ObjectRef(kind=kind, namespace=namespace, name=name)
        return self._call(self.objects.DeleteObject, objects_pb2.DeleteObjectRequest(ref=ref, force=force))
