"""`vglobal apply` of many Jobs: SubmitJobs calls of a few hundred, with a progress bar.

``Client.submit_many`` sends them: a call is stored whole or not at all; when the hub refuses one of
its documents that document is reported and the rest of its call sent again. Every Job carries a
request id made from its manifest, so applying the same folder again returns the jobs already stored
(and a call cut off is safely sent again). A Job whose name another manifest holds is applied over
it (ApplyJob): configured, unchanged, or refused naming the field that may not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from vglobal.api.v1 import jobs_pb2
from vglobal.cli.documents import Document
from vglobal.model.kinds import KINDS
from vglobal.sdk import Client, VGlobalError
from vglobal.sdk.batches import BATCH_SIZE

# What apply calls a job of each kind it was submitted as (kubectl's resource.group).
JOB_RESOURCES = {k.shown: k.printed for k in KINDS}


def _printed(doc: Document) -> str:
    """A kind not known here (one the hub has a KindDefinition of) as kubectl prints it."""
    group = str(doc.body.get("apiVersion") or "").rpartition("/")[0]
    return f"{doc.kind.lower()}.{group}" if group else "job.batch.volcano.sh"


# Above this many Jobs, apply prints a summary instead of a line per job.
LINES_UP_TO = 50


@dataclass
class Applied:
    created: int = 0
    unchanged: int = 0
    failed: int = 0
    configured: int = 0
    applied: list[Document] = field(default_factory=list)  # every document stored (or unchanged)


@dataclass(frozen=True)
class ServerSide:
    """``--server-side``: each Job through ApplyJob as this field manager (conflicts refused unless
    ``force``)."""

    manager: str = ""
    force: bool = False


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
    server_side: ServerSide | None = None,
) -> Applied:
    """Submit the Job documents in batches; report each refused one on ``err_console``. With
    ``dry_run`` the hub checks them and stores nothing. A job whose name is taken is applied over
    the stored one (ApplyJob: configured, unchanged, or refused naming an immutable field), as is
    every job with ``server_side``."""
    suffix = " (server dry run)" if dry_run else ""
    done = Applied()
    by_key = {(d.text, request_id(d)): d for d in docs}
    quiet = len(docs) > LINES_UP_TO

    def apply_over(doc: Document) -> jobs_pb2.ApplyJobResponse | VGlobalError:
        try:
            return client.apply_job(
                doc.text,
                request_id=request_id(doc),
                field_validation=field_validation,
                dry_run=dry_run,
                server_side=server_side is not None,
                field_manager=server_side.manager if server_side else "",
                force_conflicts=server_side.force if server_side else False,
            )
        except VGlobalError as exc:
            return exc

    if server_side is not None:
        return _report([(d, apply_over(d)) for d in docs], done, console, err_console, quiet, suffix)
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
    results: list[tuple[Document, Outcome]] = []
    for item, outcome in zip(by_key, outcomes, strict=True):
        doc = by_key[item]
        taken = isinstance(outcome, VGlobalError) and outcome.code == grpc.StatusCode.ALREADY_EXISTS
        results.append((doc, apply_over(doc) if taken else outcome))
    return _report(results, done, console, err_console, quiet, suffix)


Outcome = jobs_pb2.SubmitJobResponse | jobs_pb2.ApplyJobResponse | VGlobalError


def _report(
    results: list[tuple[Document, Outcome]],
    done: Applied,
    console: Console,
    err_console: Console,
    quiet: bool,
    suffix: str,
) -> Applied:
    for doc, outcome in results:
        if isinstance(outcome, VGlobalError):
            done.failed += 1
            err_console.print(
                f"[red]error:[/red] {doc.source} ({doc.kind} {doc.name}): {outcome}",
                highlight=False,
                soft_wrap=True,
            )
            continue
        if isinstance(outcome, jobs_pb2.ApplyJobResponse):
            verb = outcome.result
        else:
            verb = "created" if outcome.created else "unchanged"
        done.applied.append(doc)
        done.created += verb == "created"
        done.configured += verb == "configured"
        done.unchanged += verb == "unchanged"
        if not quiet:
            job = outcome.job
            console.print(
                f"{JOB_RESOURCES.get(job.kind) or _printed(doc)}/{job.namespace}/{job.name} "
                f"{verb}{suffix}",
                highlight=False,
            )
    if quiet:
        console.print(
            f"{done.created} jobs created, {done.configured} configured, {done.unchanged} unchanged, "
            f"{done.failed} refused{suffix}",
            highlight=False,
        )
    return done

