"""Typed settings for the hub and the agent, read from flags and VGLOBAL_* environment variables."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from vglobal.dial import is_loopback

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(s|m|h))?\s*$")
_PER = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_rate(text: str) -> float:
    """``100/s``, ``6000/m`` or ``100`` as calls per second; 0 turns the limit off."""
    m = _RATE.match(text)
    if m is None:
        raise ValueError(f'rate-limit: expected N/s, N/m or N/h, got "{text}"')
    return float(m.group(1)) / _PER[m.group(2) or "s"]


class HubSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VGLOBAL_", extra="ignore")

    listen: str = "127.0.0.1:50051"
    database_url: str | None = None
    data_dir: Path | None = None
    metrics_listen: str | None = None
    dispatch_interval: float = Field(1.0, gt=0)
    cluster_timeout: float = Field(30.0, gt=0)
    failover_after: float = Field(300.0, ge=0)
    # Finished jobs older than this are removed with their bindings and events (0: kept forever).
    finished_job_ttl: float = Field(7 * 86400.0, ge=0)
    heartbeat_interval: float = Field(5.0, gt=0)
    exclude_for: float = Field(
        300.0, ge=0, description="how long a rejected or failed-over cluster is skipped"
    )
    placement: str = Field("binpack", pattern="^(binpack|spread)$")
    starvation_after: float = Field(600.0, ge=0)
    reclaim_after: float = Field(0.0, ge=0, description="how long a job waits before it may reclaim")
    reclaim_min_runtime: float = Field(
        0.0, ge=0, description="how long a job must have run before it may be reclaimed"
    )
    queue_lookback: int = Field(
        1000, ge=0, description="jobs per leaf queue examined each cycle, in queue order (0 = all)"
    )
    max_admissions_per_cycle: int = Field(
        5000, ge=0, description="admissions per dispatch cycle at most; the rest go next cycle (0 = all)"
    )
    max_manifest_bytes: int = Field(1_048_576, gt=0)
    max_batch: int = Field(1000, gt=0)
    max_tasks_per_job: int = Field(1000, gt=0)
    max_pods_per_job: int = Field(20_000, gt=0)
    watch_keep_for: float = Field(900.0, gt=0, description="how long job changes stay in the watch log (s)")
    watch_keep_changes: int = Field(500_000, gt=0, description="job changes the watch log keeps at most")
    watch_buffer: int = Field(
        10_000, gt=0, description="events a watcher may fall behind by before it is cut off"
    )
    max_watches: int = Field(32, gt=0, description="watch streams one hub serves at a time")
    queue_history_keep: float = Field(
        7 * 86400.0, gt=0, description="how long each queue's sampled share history is kept (s)"
    )
    queue_history_interval: float = Field(
        60.0, gt=0, description="how often the leader samples each queue's share history (s)"
    )
    hub_id: str = ""
    # Security: TLS, client certificates for agents, the auth config, limits.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    client_ca: Path | None = None
    agent_listen: str | None = None
    auth_config: Path | None = None
    insecure: bool = False
    rate_limit: float = Field(100.0, ge=0, description="calls a second per principal on average (0 = off)")
    rate_burst: int = Field(500, ge=1)
    max_agent_streams: int = Field(1000, ge=1)
    register_timeout: float = Field(5.0, gt=0, description="an agent stream must Register within this")
    grpc_workers: int = Field(32, ge=1, description="threads serving the unary API")

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @model_validator(mode="after")
    def _secure_by_default(self) -> Self:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        if self.client_ca is not None and not self.tls:
            raise ValueError("--client-ca needs --tls-cert and --tls-key")
        if (self.client_ca is None) != (self.agent_listen is None):
            raise ValueError(
                "--client-ca and --agent-listen go together: agents' client certificates are checked "
                "on a port of their own (gRPC's Python server cannot ask for an optional certificate "
                "on the port users reach without one)"
            )
        if self.insecure:
            return self
        if not self.tls and not is_loopback(self.listen):
            raise ValueError(
                f"--listen {self.listen}: without TLS the hub listens only on loopback; give --tls-cert "
                "and --tls-key (or --insecure to serve plaintext anyway)"
            )
        if self.auth_config is None and not is_loopback(self.listen):
            raise ValueError(
                f"--listen {self.listen}: beyond loopback the hub needs --auth-config (users' tokens and "
                "roles), or --insecure to let anyone who reaches it do anything"
            )
        return self
