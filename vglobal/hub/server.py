"""Starting a hub: database, migrations, gRPC server, loops; stopping it cleanly on a signal."""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from vglobal.api.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    clusters_pb2,
    clusters_pb2_grpc,
    cronjobs_pb2,
    cronjobs_pb2_grpc,
    jobflows_pb2,
    jobflows_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.clock import Clock, RealClock
from vglobal.config import HubSettings
from vglobal.hub.context import HubContext
from vglobal.hub.cron.loop import run_cron
from vglobal.hub.dispatch.loop import run_dispatcher
from vglobal.hub.failover import run_failover
from vglobal.hub.flows.loop import run_flows
from vglobal.hub.leader import Leader
from vglobal.hub.metrics import serve_metrics
from vglobal.hub.notify import listen_forever
from vglobal.hub.servicers.agent import AgentServicer
from vglobal.hub.servicers.clusters import ClusterServicer
from vglobal.hub.servicers.cronjobs import CronJobServicer
from vglobal.hub.servicers.jobflows import JobFlowServicer
from vglobal.hub.servicers.jobs import JobServicer
from vglobal.hub.servicers.queues import QueueServicer
from vglobal.hub.watch.feed import WatchFeed
from vglobal.hub.watch.log_loop import run_change_log
from vglobal.store import migrate
from vglobal.store.embedded import default_data_dir, start_embedded
from vglobal.store.engine import make_engine, make_sessionmaker

log = logging.getLogger(__name__)

MAX_MESSAGE = 16 * 1024 * 1024
SERVICES = [
    jobs_pb2.DESCRIPTOR.services_by_name["JobService"].full_name,
    queues_pb2.DESCRIPTOR.services_by_name["QueueService"].full_name,
    clusters_pb2.DESCRIPTOR.services_by_name["ClusterService"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name,
    cronjobs_pb2.DESCRIPTOR.services_by_name["CronJobService"].full_name,
    jobflows_pb2.DESCRIPTOR.services_by_name["JobFlowService"].full_name,
]


def libpq_dsn(url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


class Hub:
    def __init__(self, settings: HubSettings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.stop = threading.Event()
        self._pg: Any = None
        url = settings.database_url
        if not url:
            url, self._pg = start_embedded(settings.data_dir or default_data_dir())
        self.url = url
        engine = make_engine(url)
        migrate.upgrade(engine)
        self.ctx = HubContext(
            settings=settings, engine=engine, sessions=make_sessionmaker(engine), clock=clock or RealClock()
        )
        if not settings.hub_id:
            settings.hub_id = f"{socket.gethostname()}:{settings.listen}"
        self.leader = Leader(engine)
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=128, thread_name_prefix="grpc"),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
                ("grpc.so_reuseport", 0),
            ],
        )
        self.feed = WatchFeed(self.ctx)
        jobs_pb2_grpc.add_JobServiceServicer_to_server(JobServicer(self.ctx, self.feed), self.server)
        queues_pb2_grpc.add_QueueServiceServicer_to_server(QueueServicer(self.ctx), self.server)
        clusters_pb2_grpc.add_ClusterServiceServicer_to_server(ClusterServicer(self.ctx), self.server)
        agent_pb2_grpc.add_AgentServiceServicer_to_server(AgentServicer(self.ctx), self.server)
        cronjobs_pb2_grpc.add_CronJobServiceServicer_to_server(CronJobServicer(self.ctx), self.server)
        jobflows_pb2_grpc.add_JobFlowServiceServicer_to_server(JobFlowServicer(self.ctx), self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            [*SERVICES, reflection.SERVICE_NAME, health.SERVICE_NAME], self.server
        )
        self.port = self.server.add_insecure_port(settings.listen)
        if self.port == 0:
            raise RuntimeError(f"cannot listen on {settings.listen}")
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.server.start()
        loops: list[tuple[str, Callable[..., object], tuple[Any, ...]]] = [
            ("notify", listen_forever, (libpq_dsn(self.url), self.ctx.wakeups, self.stop)),
            ("dispatcher", run_dispatcher, (self.ctx, self.leader, self.stop)),
            ("failover", run_failover, (self.ctx, self.leader, self.stop)),
            ("cron", run_cron, (self.ctx, self.leader, self.stop)),
            ("jobflows", run_flows, (self.ctx, self.leader, self.stop)),
            ("watch-log", run_change_log, (self.ctx, self.leader, self.stop)),
            ("watch-feed", self.feed.run, (self.stop,)),
        ]
        for name, target, args in loops:
            t = threading.Thread(target=target, args=args, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        if self.settings.metrics_listen:
            serve_metrics(self.settings.metrics_listen)
        for service in ["", *SERVICES]:
            self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        log.info("hub listening on %s", self.settings.listen)

    def shutdown(self) -> None:
        self.health.enter_graceful_shutdown()
        self.stop.set()
        for channel in self.ctx.wakeups.channels:
            self.ctx.wakeups.fire(channel)  # loops waiting for news see the stop at once
        self.server.stop(grace=2.0).wait(5.0)
        for t in self._threads:
            t.join(timeout=3.0)
        self.leader.release()
        self.ctx.engine.dispose()


def run_hub(settings: HubSettings) -> None:
    hub = Hub(settings)
    hub.start()
    done = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal %d, shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    done.wait()
    hub.shutdown()
