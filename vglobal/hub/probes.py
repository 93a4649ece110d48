"""What any gRPC tool may ask without credentials: health (Check, Watch, List) and reflection.

Reflection is served as v1alpha and as v1, which tools try first: the two protocols have the same
messages under another package name, so one servicer answers both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection, reflection_pb2

REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


class HealthServicer(health.aio.HealthServicer):  # type: ignore[misc]
    """The standard health service with List, which grpcio-health-checking leaves unimplemented."""

    async def List(
        self, request: health_pb2.HealthListRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthListResponse:
        statuses = {
            name: health_pb2.HealthCheckResponse(status=status)
            for name, status in self._server_status.items()
        }
        return health_pb2.HealthListResponse(statuses=statuses)


def _register_v1_descriptor() -> None:
    """Add grpc.reflection.v1's file to the default pool (a renamed copy of v1alpha's), so reflection
    can describe the v1 service it serves."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    old, new = reflection_pb2.DESCRIPTOR.package, "grpc.reflection.v1"
    proto.name, proto.package = _V1_FILE, new
    for message in proto.message_type:
        for f in message.field:
            if f.type_name.startswith(f".{old}."):
                f.type_name = f".{new}." + f.type_name[len(old) + 2 :]
    for service in proto.service:
        for m in service.method:
            m.input_type = m.input_type.replace(f".{old}.", f".{new}.")
            m.output_type = m.output_type.replace(f".{old}.", f".{new}.")
    pool.Add(proto)


def add_reflection(server: grpc.aio.Server, services: Sequence[str]) -> None:
    """Serve reflection v1alpha and v1 for ``services`` (plus health and reflection themselves)."""
    _register_v1_descriptor()
    names = [*services, health.SERVICE_NAME, reflection.SERVICE_NAME, REFLECTION_V1]
    servicer = reflection.aio.ReflectionServicer(names)
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        tuple(
            grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": handler})
            for name in (reflection.SERVICE_NAME, REFLECTION_V1)
        )
    )
