"""`vglobal apply` of many Jobs: SubmitJobs calls of a few hundred, with a progress bar.

``Client.submit_many`` sends them: a call is stored whole or not at all; when the hub refuses one of
its documents that document is reported and the rest of its call sent again. Every Job carries a
request id made from its manifest, so applying the same folder again returns the jobs already stored
(and a call cut off is safely sent again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from vglobal.cli.documents import Document
from vglobal.model.kinds import KINDS
from vglobal.sdk import Client, VGlobalError
from vglobal.sdk.batches import BATCH_SIZE

# What apply calls a job of each kind it was submitted as (kubectl's resource.group).
JOB_RESOURCES = {k.shown: k.printed for k in KINDS}

# Above this many Jobs, apply prints a summary instead of a line per job.
LINES_UP_TO = 50


@dataclass
class Applied:
    created: int = 0
    unchanged: int = 0
    failed: int = 0


def apply_jobs(
    client: Client,
    docs: list[Document],
    request_id: Callable[[Document], str],
    console: Console,
    err_console: Console,
    batch_size: int = BATCH_SIZE,
    *,
    field_validation: str = "",
    dry_run: bool = False,
) -> Applied:
    """Submit the Job documents in batches; report each refused one on ``err_console``. With
    ``dry_run`` the hub checks them and stores nothing."""
    suffix = " (server dry run)" if dry_run else ""
    done = Applied()
    by_key = {(d.text, request_id(d)): d for d in docs}
    quiet = len(docs) > LINES_UP_TO
    with Progress(
        TextColumn("applying jobs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not quiet,
    ) as progress:
        task = progress.add_task("jobs", total=len(docs))
        outcomes = client.submit_many(
            by_key,
            batch_size=batch_size,
            progress=lambda n: progress.advance(task, n),
            field_validation=field_validation,
            dry_run=dry_run,
            keep_going=True,
        )
    for item, outcome in zip(by_key, outcomes, strict=True):
        doc = by_key[item]
        if isinstance(outcome, VGlobalError):
            done.failed += 1
            err_console.print(
                f"[red]error:[/red] {doc.source} ({doc.kind} {doc.name}): {outcome}",
                highlight=False,
                soft_wrap=True,
            )
            continue
        done.created += outcome.created
        done.unchanged += not outcome.created
        if not quiet:
            verb = "created" if outcome.created else "unchanged"
            job = outcome.job
            console.print(
                f"{JOB_RESOURCES.get(job.kind, 'job.batch.volcano.sh')}/{job.namespace}/{job.name} "
                f"{verb}{suffix}",
                highlight=False,
            )
    if quiet:
        console.print(
            f"{done.created} jobs created, {done.unchanged} unchanged, {done.failed} refused{suffix}",
            highlight=False,
        )
    return done

