"""`vglobal logs JOB [POD]`: a job's pod output from wherever it runs, as `kubectl logs` shows it."""

from __future__ import annotations

import sys

import click

from vglobal.cli.common import Ctx, fail
from vglobal.cli.interrupt import interruptible
from vglobal.model.duration import parse_duration
from vglobal.sdk import VGlobalError


@click.command()
@click.argument("job")
@click.argument("pod", required=False, default="")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("-t", "--task", default="", help="Every pod of this task of the job (as kubectl's -l).")
@click.option("-c", "--container", default="", help="The container (default: the pod's first).")
@click.option("-f", "--follow", is_flag=True, help="Keep printing what the pods write until they end.")
@click.option("--tail", type=click.IntRange(min=0), default=None, help="The last N lines of each pod.")
@click.option("--since", default="", help="Lines of the last duration only (e.g. 5m, 1h).")
@click.option("--previous", is_flag=True, help="The output of the previous, restarted, container.")
@click.option("--timestamps", is_flag=True, help="Begin each line with its RFC 3339 time.")
@click.option("--prefix", is_flag=True, help="Begin each line with [pod/NAME] (kubectl's --prefix).")
@click.pass_obj
def logs(
    obj: Ctx,
    job: str,
    pod: str,
    namespace: str,
    task: str,
    container: str,
    follow: bool,
    tail: int | None,
    since: str,
    previous: bool,
    timestamps: bool,
    prefix: bool,
) -> None:
    """Print the output of a job's pods (all of them, one POD, or a --task's), read by the agent of
    the cluster that runs the job and relayed by the hub: no credentials for the member cluster."""
    if pod and task:
        fail("--task: name a pod or a task, not both")
    try:
        seconds = parse_duration(since) if since else None
    except ValueError as exc:
        fail(f"--since: {exc}")
    if seconds is not None and seconds <= 0:
        fail("--since: must be a positive duration")
    if follow:
        interruptible()
    stream = obj.client.logs(
        job, namespace, pod=pod, task=task, container=container, follow=follow, tail=tail,
        since=seconds, previous=previous, timestamps=timestamps,
    )  # fmt: skip
    out = sys.stdout
    try:
        for line in stream:
            out.write(f"[pod/{line.pod}] {line.text}\n" if prefix else f"{line.text}\n")
            if follow:
                out.flush()
    except VGlobalError as exc:
        out.flush()
        fail(str(exc))
    except KeyboardInterrupt:
        stream.close()
