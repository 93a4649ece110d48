"""Typed settings for the hub and the agent, read from flags and VGLOBAL_* environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class HubSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VGLOBAL_", extra="ignore")

    listen: str = "127.0.0.1:50051"
    database_url: str | None = None
    data_dir: Path | None = None
    metrics_listen: str | None = None
    dispatch_interval: float = Field(1.0, gt=0)
    cluster_timeout: float = Field(30.0, gt=0)
    failover_after: float = Field(300.0, ge=0)
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
    watch_keep_for: float = Field(900.0, gt=0, description="how long job changes stay in the watch log (s)")
    watch_keep_changes: int = Field(500_000, gt=0, description="job changes the watch log keeps at most")
    watch_buffer: int = Field(
        10_000, gt=0, description="events a watcher may fall behind by before it is cut off"
    )
    max_watches: int = Field(32, gt=0, description="watch streams one hub serves at a time")
    hub_id: str = ""
