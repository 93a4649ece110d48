"""The hub serves standard gRPC health checking and server reflection, so any gRPC tool can probe
it and find its API; health turns NOT_SERVING when the hub shuts down."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from vglobal.config import HubSettings
from vglobal.hub.server import Hub

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
API = [
    "vglobal.v1.AgentService",
    "vglobal.v1.ClusterService",
    "vglobal.v1.CronJobService",
    "vglobal.v1.HyperJobService",
    "vglobal.v1.JobFlowService",
    "vglobal.v1.JobService",
    "vglobal.v1.ObjectService",
    "vglobal.v1.QueueService",
]


def _status(channel: grpc.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def test_health_and_reflection_describe_the_hub(database_url: str) -> None:
    hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.2))
    hub.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{hub.port}")
    try:
        assert {s: _status(channel, s) for s in ["", *API]} == dict.fromkeys(["", *API], SERVING)
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        (listed,) = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        names = sorted(s.name for s in listed.list_services_response.service)
        assert names == sorted(
            [
                *API,
                "grpc.health.v1.Health",
                "grpc.reflection.v1alpha.ServerReflection",
                "grpc.reflection.v1.ServerReflection",
            ]
        )
        # reflection also hands out the API's descriptors, e.g. for grpcurl
        (found,) = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(file_containing_symbol="vglobal.v1.JobService")])
        )
        assert found.file_descriptor_response.file_descriptor_proto
        health = hub.health
        hub.shutdown()
        # shutting down marks the services NOT_SERVING first, so balancers stop sending calls
        assert health._server_status[API[2]] == NOT_SERVING
    finally:
        channel.close()
