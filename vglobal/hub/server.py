"""Starting a hub: database, migrations, gRPC server, loops; stopping it cleanly on a signal.

The gRPC server is grpc.aio on a loop thread of its own (grpc_server.LoopServer): agent streams are
coroutines there, the unary API runs in a bounded pool. Every call passes the Guard (decoding,
credentials, roles, rate). With TLS and a client CA, agents with certificates connect to a port of
their own that requires one; users and probes use the main port, where none is asked for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from concurrent import futures
from multiprocessing.process import BaseProcess
from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc

from vglobal.api.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    clusters_pb2,
    clusters_pb2_grpc,
    cronjobs_pb2,
    cronjobs_pb2_grpc,
    hyperjobs_pb2,
    hyperjobs_pb2_grpc,
    jobflows_pb2,
    jobflows_pb2_grpc,
    jobs_pb2,
    jobs_pb2_grpc,
    objects_pb2,
    objects_pb2_grpc,
    queues_pb2,
    queues_pb2_grpc,
)
from vglobal.clock import Clock, RealClock
from vglobal.config import HubSettings
from vglobal.hub.agents.log_relay import LogRelay
from vglobal.hub.api_processes import die_with_parent, start_api_processes, stop_api_processes
from vglobal.hub.auth.authenticator import Authenticator
from vglobal.hub.auth.ratelimit import RateLimiter
from vglobal.hub.context import HubContext
from vglobal.hub.grpc_server import LoopServer, server_credentials
from vglobal.hub.guard import Guard, InFlight
from vglobal.hub.leader import Leader
from vglobal.hub.loops import LOOPS, LoopEnv, RunningLoop, start_loops
from vglobal.hub.metrics import serve_metrics
from vglobal.hub.ports import check_ports_free
from vglobal.hub.probes import HealthServicer, add_reflection
from vglobal.hub.secret_box import SecretBox
from vglobal.hub.servicers.agent import AgentServicer
from vglobal.hub.servicers.clusters import ClusterServicer
from vglobal.hub.servicers.cronjobs import CronJobServicer
from vglobal.hub.servicers.hyperjobs import HyperJobServicer
from vglobal.hub.servicers.jobflows import JobFlowServicer
from vglobal.hub.servicers.jobs import JobServicer
from vglobal.hub.servicers.logs import LogsCall
from vglobal.hub.servicers.objects import ObjectServicer, reseal_secrets
from vglobal.hub.servicers.queues import QueueServicer
from vglobal.hub.signal_wait import wait_until
from vglobal.hub.watch.feed import WatchFeed
from vglobal.hub.watch.serve import WatchServer
from vglobal.model.errors import ManifestError
from vglobal.model.kinds.generic import define_text
from vglobal.model.quantity import to_units
from vglobal.store import migrate
from vglobal.store.embedded import default_data_dir, start_embedded
from vglobal.store.engine import make_engine, make_sessionmaker

log = logging.getLogger(__name__)


MAX_MESSAGE = 16 * 1024 * 1024
MAX_METADATA = 64 * 1024
SERVICES = [
    jobs_pb2.DESCRIPTOR.services_by_name["JobService"].full_name,
    queues_pb2.DESCRIPTOR.services_by_name["QueueService"].full_name,
    clusters_pb2.DESCRIPTOR.services_by_name["ClusterService"].full_name,
    agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name,
    cronjobs_pb2.DESCRIPTOR.services_by_name["CronJobService"].full_name,
    jobflows_pb2.DESCRIPTOR.services_by_name["JobFlowService"].full_name,
    hyperjobs_pb2.DESCRIPTOR.services_by_name["HyperJobService"].full_name,
    objects_pb2.DESCRIPTOR.services_by_name["ObjectService"].full_name,
]


def libpq_dsn(url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


class Hub:
    """A hub; ``api_only``: one of the API processes a hub with --api-processes starts (no leader
    loops, no agent port, no migrations, no metrics), ``log_setup`` given to those processes."""

    def __init__(
        self,
        settings: HubSettings,
        *,
        clock: Clock | None = None,
        api_only: bool = False,
        log_setup: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.api_only, self.log_setup = api_only, log_setup
        self.children: list[BaseProcess] = []
        self.stop = threading.Event()
        self.auth = Authenticator(settings.auth_config)  # a bad file stops the hub before anything starts
        if settings.kinds_file is not None:  # so does a bad kind definition (each API process reads it)
            define_text(settings.kinds_file.read_text())
        box = SecretBox.from_sources(settings.secret_keys_file, settings.secret_keys)  # so does a bad key
        self._pg: Any = None
        if not api_only:  # the API processes share the first process's port on purpose
            check_ports_free(settings)
        url = settings.database_url
        if not url:
            url, self._pg = start_embedded(settings.data_dir or default_data_dir())
        self.url = url
        engine = make_engine(url)
        if not api_only:  # the first process migrated before it started the others
            migrate.upgrade(engine)
        self.ctx = HubContext(
            settings=settings,
            engine=engine,
            sessions=make_sessionmaker(engine),
            clock=clock or RealClock(),
            secrets=box,
        )
        if not api_only and box.ready:
            reseal_secrets(self.ctx)
        if not settings.hub_id:
            settings.hub_id = f"{socket.gethostname()}:{settings.listen}"
        self.leader = Leader(engine)
        limiter = RateLimiter(settings.rate_limit, settings.rate_burst) if settings.rate_limit > 0 else None
        # One caller's calls in progress are bounded where its rate is (a bench turns both off).
        bounded = limiter is not None and settings.calls_in_flight > 0
        in_flight = InFlight(settings.calls_in_flight) if bounded else None
        self.grpc = LoopServer(
            workers=settings.grpc_workers,
            interceptors=[Guard(self.auth, limiter, in_flight=in_flight)],
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
                # Room for an oversized token to reach the guard, which answers UNAUTHENTICATED
                # (past gRPC's own default the caller would get a RESOURCE_EXHAUSTED to retry).
                ("grpc.max_metadata_size", MAX_METADATA),
                ("grpc.absolute_max_metadata_size", MAX_METADATA),
                # Another process on the same port is a mistake, unless it is one of ours.
                ("grpc.so_reuseport", 1 if api_only or settings.api_processes > 1 else 0),
            ],
        )
        self.feed = WatchFeed(self.ctx)
        self.watches = WatchServer(self.ctx, self.feed, self.stop, self.auth)
        self.agent_pool = futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="agent-db")
        self.health = self._add_services()
        self.port, self.agent_port = self._add_ports()
        self.loops: list[RunningLoop] = []

    def _add_services(self) -> HealthServicer:
        server = self.grpc.server
        relay = LogRelay()
        logs = LogsCall(self.ctx, relay)
        jobs = JobServicer(self.ctx, self.watches, logs.serve)
        jobs_pb2_grpc.add_JobServiceServicer_to_server(jobs, server)
        queues_pb2_grpc.add_QueueServiceServicer_to_server(QueueServicer(self.ctx), server)
        objects_pb2_grpc.add_ObjectServiceServicer_to_server(ObjectServicer(self.ctx), server)
        clusters_pb2_grpc.add_ClusterServiceServicer_to_server(ClusterServicer(self.ctx), server)
        cronjobs_pb2_grpc.add_CronJobServiceServicer_to_server(CronJobServicer(self.ctx), server)
        jobflows_pb2_grpc.add_JobFlowServiceServicer_to_server(JobFlowServicer(self.ctx), server)
        hyperjobs_pb2_grpc.add_HyperJobServiceServicer_to_server(HyperJobServicer(self.ctx), server)
        agents = AgentServicer(self.ctx, self.grpc.loop, self.agent_pool, relay)
        agent_pb2_grpc.add_AgentServiceServicer_to_server(agents, server)
        health = self.grpc.run(_new_health())
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        add_reflection(server, SERVICES)
        return health

    def _add_ports(self) -> tuple[int, int | None]:
        s = self.settings
        if s.tls_cert is None or s.tls_key is None:
            return self.grpc.add_port(s.listen), None
        port = self.grpc.add_port(s.listen, server_credentials(s.tls_cert, s.tls_key))
        if s.client_ca is None or s.agent_listen is None or self.api_only:
            return port, None
        agents = server_credentials(s.tls_cert, s.tls_key, client_ca=s.client_ca)
        return port, self.grpc.add_port(s.agent_listen, agents)

    def start(self) -> None:
        # Quantity parsing loads the Kubernetes client (~0.4 s): before serving, not in the
        # first caller's submit.
        to_units("cpu", "1")
        self.grpc.start()
        env = LoopEnv(self.ctx, self.leader, self.stop, self.feed, libpq_dsn(self.url))
        self.loops = start_loops(env, tuple(d for d in LOOPS if not (self.api_only and d.leader_only)))
        if self.settings.api_processes > 1 and not self.api_only:
            self.children = start_api_processes(self.settings, self.url, self.port, self.log_setup, serve_api)
        if self.settings.metrics_listen:
            serve_metrics(self.settings.metrics_listen)
        for service in ["", *SERVICES]:
            self.grpc.run(self.health.set(service, health_pb2.HealthCheckResponse.SERVING))
        s = self.settings
        log.info(
            "hub %slistening on %s (%s, %s)%s",
            "API process " if self.api_only else "",
            s.listen,
            "TLS" if s.tls else "plaintext",
            "auth config " + str(s.auth_config) if s.auth_config else "open: no auth config",
            f", agents with client certificates on {s.agent_listen}" if s.agent_listen else "",
        )

    def reload_auth(self) -> None:
        """Read the auth config again (SIGHUP); a bad file is refused and the old one stays."""
        try:
            self.auth.reload()
        except ManifestError as exc:
            log.error("auth config not reloaded, the old one is kept: %s", exc)
            return
        log.info("auth config reloaded from %s", self.settings.auth_config)
        self.watches.recheck_all()  # streams of a removed or narrowed caller end now
        for child in self.children:  # each --api-processes process holds its own copy
            if child.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGHUP)

    def shutdown(self) -> None:
        stop_api_processes(self.children)
        self.grpc.run(self.health.enter_graceful_shutdown())
        self.stop.set()
        for channel in self.ctx.wakeups.channels:
            self.ctx.wakeups.fire(channel)  # loops waiting for news see the stop at once
        self.feed.poke()  # watch streams see the stop at once
        self.grpc.stop(grace=2.0)
        self.watches.shutdown()
        self.agent_pool.shutdown(wait=False, cancel_futures=True)
        for running in self.loops:
            running.thread.join(timeout=3.0)
        self.leader.release()
        self.ctx.engine.dispose()


async def _new_health() -> HealthServicer:
    health = HealthServicer()  # its conditions belong to the server's loop
    # grpc's servicer starts SERVING; the hub is ready only once its loops and metrics are up.
    await health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    return health


def run_hub(settings: HubSettings, *, log_setup: Callable[[], None] | None = None) -> None:
    hub = Hub(settings, log_setup=log_setup)
    hub.start()
    done = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("received signal %d, shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(
        signal.SIGHUP, lambda _s, _f: threading.Thread(target=hub.reload_auth, name="reload").start()
    )
    wait_until(done)
    hub.shutdown()


def serve_api(settings: HubSettings, parent: int, log_setup: Callable[[], None] | None) -> None:
    """One of a hub's --api-processes: serve the API until SIGTERM, or until the parent is gone."""
    die_with_parent(parent)
    if log_setup is not None:
        log_setup()
    hub = Hub(settings, api_only=True)
    hub.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda _s, _f: done.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C goes to the parent, which stops us
    # The parent passes its SIGHUP on: the auth config is read again here too.
    signal.signal(
        signal.SIGHUP, lambda _s, _f: threading.Thread(target=hub.reload_auth, name="reload").start()
    )
    wait_until(done)
    hub.shutdown()
