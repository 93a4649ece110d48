"""``vglobal hub``: run a hub (gRPC API, dispatcher, failover) on an embedded or external Postgres."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vglobal.cli.common import fail, setup_logging
from vglobal.cli.hub_flags import security_options, security_settings, settings_error


@click.command()
@click.option("--listen", default="127.0.0.1:50051", show_default=True)
@click.option(
    "--data-dir", type=click.Path(path_type=Path), default=None, help="Embedded Postgres data directory."
)
@click.option(
    "--database-url", envvar="VGLOBAL_DATABASE_URL", default=None, help="Use this Postgres instead."
)
@click.option("--metrics-listen", default=None, help="Serve Prometheus metrics on HOST:PORT.")
@click.option("--dispatch-interval", default="1s", show_default=True)
@click.option("--cluster-timeout", default="30s", show_default=True)
@click.option("--failover-after", default="5m", show_default=True)
@click.option("--heartbeat-interval", default="5s", show_default=True)
@click.option(
    "--finished-job-ttl",
    default="168h",
    show_default=True,
    help="Remove jobs this long after they finished, with their events (0 = keep them).",
)
@click.option("--placement", type=click.Choice(["binpack", "spread"]), default="binpack", show_default=True)
@click.option("--starvation-after", default="10m", show_default=True)
@click.option(
    "--reclaim-after",
    default="0s",
    show_default=True,
    help="A job must have waited this long before it may take capacity back from other queues.",
)
@click.option(
    "--reclaim-min-runtime",
    default="0s",
    show_default=True,
    help="A job must have run this long before another queue may take it back (guards long jobs).",
)
@click.option(
    "--queue-lookback",
    type=int,
    default=1000,
    show_default=True,
    help="Jobs per leaf queue examined each cycle, in queue order; the rest wait a turn (0 = all).",
)
@click.option(
    "--max-admissions-per-cycle",
    type=int,
    default=5000,
    show_default=True,
    help="Admissions per dispatch cycle at most; a bigger burst goes on in the next cycle at once (0 = all).",
)
@click.option(
    "--watch-keep-for",
    default="15m",
    show_default=True,
    help="Job changes stay this long in the watch log; a watch resuming from older gets OUT_OF_RANGE.",
)
@click.option("--watch-keep-changes", type=click.IntRange(min=1), default=500_000, show_default=True)
@click.option(
    "--watch-buffer",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Changes a watcher may fall behind by before it is cut off (RESOURCE_EXHAUSTED).",
)
@click.option("--max-watches", type=click.IntRange(min=1), default=32, show_default=True)
@click.option(
    "--queue-history-keep",
    default="168h",
    show_default=True,
    help="Keep each queue's sampled share history this long (GetQueueHistory, the dashboard's plots).",
)
@click.option(
    "--queue-history-interval", default="1m", show_default=True, help="Sample each queue's share this often."
)
@security_options
@click.option("-v", "--verbose", is_flag=True)
def hub(
    listen: str,
    data_dir: Path | None,
    database_url: str | None,
    metrics_listen: str | None,
    dispatch_interval: str,
    cluster_timeout: str,
    failover_after: str,
    heartbeat_interval: str,
    finished_job_ttl: str,
    placement: str,
    starvation_after: str,
    reclaim_after: str,
    reclaim_min_runtime: str,
    queue_lookback: int,
    max_admissions_per_cycle: int,
    watch_keep_for: str,
    watch_keep_changes: int,
    watch_buffer: int,
    max_watches: int,
    queue_history_keep: str,
    queue_history_interval: str,
    verbose: bool,
    **security: Any,
) -> None:
    """Run a hub (gRPC API, dispatcher, failover) on an embedded or external Postgres."""
    from vglobal.config import HubSettings
    from vglobal.hub.server import run_hub
    from vglobal.model.duration import parse_duration

    setup_logging(verbose)
    try:
        settings = HubSettings(
            listen=listen,
            data_dir=data_dir,
            database_url=database_url,
            metrics_listen=metrics_listen,
            dispatch_interval=parse_duration(dispatch_interval),
            cluster_timeout=parse_duration(cluster_timeout),
            failover_after=parse_duration(failover_after),
            heartbeat_interval=parse_duration(heartbeat_interval),
            finished_job_ttl=parse_duration(finished_job_ttl),
            placement=placement,
            starvation_after=parse_duration(starvation_after),
            reclaim_after=parse_duration(reclaim_after),
            reclaim_min_runtime=parse_duration(reclaim_min_runtime),
            queue_lookback=queue_lookback,
            max_admissions_per_cycle=max_admissions_per_cycle,
            watch_keep_for=parse_duration(watch_keep_for),
            watch_keep_changes=watch_keep_changes,
            watch_buffer=watch_buffer,
            max_watches=max_watches,
            queue_history_keep=parse_duration(queue_history_keep),
            queue_history_interval=parse_duration(queue_history_interval),
            **security_settings(security),
        )
    except ValueError as exc:
        fail(settings_error(exc))
    run_hub(settings)
