"""`vglobal apply`: manifests from files, directories and stdin, checked as kubectl checks them.

``--validate`` says what to do with fields a kind does not define (kubectl's ``--validate``): the
value goes to the hub in each request and the hub decides; with ``warn`` each such field is also
printed here. ``--dry-run=client`` checks the manifests here and sends nothing; ``--dry-run=server``
has the hub check and authorize them without storing anything.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import click
import grpc

from vglobal.cli.claims import attach_claims
from vglobal.cli.common import Ctx, console, err_console, fail
from vglobal.cli.documents import Document, DocumentError, apply_order, read_documents
from vglobal.cli.live import LIVE, named, result
from vglobal.cli.pod_groups import attach_pods
from vglobal.cli.prune import parse_selector, selected
from vglobal.cli.prune import prune as prune_missing
from vglobal.cli.workflows import KINDS as WORKFLOW_KINDS
from vglobal.cli.workflows import apply_workflow
from vglobal.model.errors import ManifestError
from vglobal.model.fields import FieldValidation, parse_validation
from vglobal.model.kinds import KINDS, kind_of
from vglobal.model.kinds import WORKLOADS as WORKLOAD_KINDS
from vglobal.model.manifests import field_warnings, parse_manifest
from vglobal.sdk import VGlobalError

# What a kind is called in the lines apply prints (kubectl's resource.group); a kind submitted as a
# job by its record (the first of a name: kind Job is a Volcano Job unless its apiVersion says more).
RESOURCES = {
    **{k.kind: k.printed for k in reversed(KINDS)},
    "Queue": "queue.scheduling.volcano.sh",
    "PriorityClass": "priorityclass.scheduling.k8s.io",
    "Namespace": "namespace",
    "CronJob": "cronjob.batch.volcano.sh",
    "JobTemplate": "jobtemplate.flow.volcano.sh",
    "JobFlow": "jobflow.flow.volcano.sh",
    "HyperJob": "hyperjob.training.volcano.sh",
    "ConfigMap": "configmap",
    "Secret": "secret",
}
# The workload kinds a controller in the member cluster runs: submitted as jobs.
WORKLOADS = tuple(dict.fromkeys(k.kind for k in WORKLOAD_KINDS if k.kind != "Job"))
# Kinds whose apply the hub can dry-run; the others are checked here under --dry-run=server.
SERVER_DRY_RUN = ("Job", "Queue", "PriorityClass", "Namespace", "HyperJob", "ConfigMap", "Secret", *WORKLOADS)
# Cluster-wide kinds the hub holds as they are applied.
CLUSTER_WIDE = ("Queue", "PriorityClass", "Namespace")


def submitted_as_job(d: Document) -> bool:
    """A Volcano Job or a workload kind (batch/v1 Job is kind Job too): sent in SubmitJobs batches;
    so is a custom resource of a kind not known here, which the hub may have a KindDefinition of
    (``vglobal hub --kinds-file``; without one it refuses the kind, naming it)."""
    if d.kind == "Job" or d.kind in WORKLOADS:
        return True
    group = str(d.body.get("apiVersion") or "").rpartition("/")[0]
    return "." in group and d.kind not in RESOURCES and d.kind not in WORKFLOW_KINDS


def request_id_for(kind: str, body: dict[str, Any]) -> str:
    """Re-applying the same manifest returns the same job instead of failing."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
    return f"apply-{kind.lower()}-{digest}"


def _unknown_kind(d: Document) -> VGlobalError:
    return VGlobalError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'kind: unknown kind "{d.kind}" '
        "(supported: Job, HyperJob, Queue, PriorityClass, Namespace, ConfigMap, Secret, "
        f"{', '.join(WORKFLOW_KINDS)}, "
        f"{', '.join(WORKLOADS)})",
    )


def _named(d: Document) -> str:
    meta = d.body.get("metadata")
    namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or "default"
    scoped = d.kind not in CLUSTER_WIDE
    record = kind_of(d.body)
    resource = record.printed if record is not None else RESOURCES.get(d.kind, d.kind)
    return f"{resource}/{namespace + '/' if scoped else ''}{d.name}"


def _check_here(d: Document, validation: FieldValidation) -> str:
    """Validate one document as the hub would (its references aside); the line to print."""
    if d.kind not in RESOURCES:
        raise _unknown_kind(d)
    try:
        parse_manifest(d.body, validation=validation)
    except ManifestError as exc:
        raise VGlobalError(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
    return (
        f"{_named(d)} {'created' if submitted_as_job(d) or d.kind == 'HyperJob' else 'configured'} (dry run)"
    )


def _apply_one(obj: Ctx, d: Document, validation: str, dry_run: bool) -> str:
    if d.kind in CLUSTER_WIDE:
        before = LIVE[d.kind].get(obj.client, "", d.name)
        if d.kind == "Queue":
            obj.client.apply_queue(d.text, field_validation=validation, dry_run=dry_run)
        elif d.kind == "Namespace":
            obj.client.apply_namespace(d.text, field_validation=validation, dry_run=dry_run)
        else:
            obj.client.apply_priority_class(d.text, field_validation=validation, dry_run=dry_run)
        return f"{named(d.kind, '', d.name)} {result(before, d)}"
    if d.kind in WORKFLOW_KINDS:
        return apply_workflow(obj.client, d, field_validation=validation)
    if d.kind in ("ConfigMap", "Secret"):  # before the jobs that use them: those go in batches after
        applied = obj.client.apply_object(d.text, field_validation=validation, dry_run=dry_run)
        return f"{_named(d)} {applied.outcome}"
    if d.kind == "HyperJob":
        got = obj.client.submit_job(
            d.text, request_id=request_id_for(d.kind, d.body), field_validation=validation, dry_run=dry_run
        )
        kids = ", ".join(j.name for j in got.hyperjob_children)
        verb = "created" if got.created else "unchanged"
        return f"{_named(d)} {verb} ({len(got.hyperjob_children)} children: {kids})"
    raise _unknown_kind(d)


def _error(d: Document, exc: Exception) -> None:
    err_console.print(
        f"[red]error:[/red] {d.source} ({d.kind} {d.name}): {exc}", highlight=False, soft_wrap=True
    )


@click.command()
@click.option(
    "-f",
    "--filename",
    "paths",
    type=click.Path(path_type=Path, allow_dash=True),
    multiple=True,
    required=True,
    help="A file, a directory (its .yaml/.yml/.json files, sorted) or - for stdin; repeat for more.",
)
@click.option(
    "--validate",
    default="strict",
    show_default=True,
    metavar="strict|warn|ignore",
    help="Fields a kind does not define: refuse the object (strict), warn, or ignore them.",
)
@click.option(
    "--dry-run",
    "dry_run",
    type=click.Choice(["none", "client", "server"]),
    default="none",
    show_default=True,
    help="client: check here, send nothing; server: the hub checks and authorizes, stores nothing.",
)
@click.option("--server-side", is_flag=True, help="Jobs: refuse to change fields another field manager set.")
@click.option("--force-conflicts", is_flag=True, help="With --server-side: take such fields over.")
@click.option("--field-manager", default="", help="With --server-side: who applies (default vglobal).")
@click.option(
    "--prune",
    is_flag=True,
    help="Delete what carries -l SELECTOR (of any kind apply takes) and is not in the files.",
)
@click.option("-l", "--selector", default="", help="key=value[,...]: apply (and prune) only what carries it.")
@click.pass_obj
def apply(
    obj: Ctx,
    paths: tuple[Path, ...],
    validate: str,
    dry_run: str,
    server_side: bool,
    force_conflicts: bool,
    field_manager: str,
    prune: bool,
    selector: str,
) -> None:
    """Create or update Jobs, HyperJobs, Queues, PriorityClasses, CronJobs, JobTemplates, JobFlows, and the
    ConfigMaps and Secrets jobs use, from YAML/JSON manifests: each is created, configured or
    unchanged, as kubectl prints."""
    if prune and not selector:
        fail("--prune: needs -l SELECTOR (what to delete when the files no longer have it)")
    if force_conflicts and not server_side:
        fail("--force-conflicts: only with --server-side")
    try:
        wanted = parse_selector(selector) if selector else {}
    except ValueError as exc:
        fail(f"-l: {exc}")
    try:
        validation = parse_validation(validate)
        docs = apply_order(read_documents(list(paths)))
    except (ValueError, DocumentError) as exc:
        fail(f"--validate: {exc}" if not isinstance(exc, DocumentError) else str(exc))
    docs, claim_lines = attach_claims(docs)
    docs = attach_pods(docs)
    for line in claim_lines:
        console.print(line, highlight=False)
    if wanted:
        docs = selected(docs, wanted)
    if validation == FieldValidation.WARN:
        for d in docs:
            for warning in field_warnings(d.body):
                err_console.print(f"Warning: {d.source} ({d.kind} {d.name}): {warning}", highlight=False)
        from vglobal.cli.hyperjobs import unknown_cluster_warnings

        for line in unknown_cluster_warnings(obj.client, docs) if dry_run != "client" else []:
            err_console.print(line, highlight=False)
    failed = False
    on_server = dry_run == "server"
    for d in docs:
        if submitted_as_job(d) and dry_run != "client":
            continue  # after the queues and priority classes, in batches
        try:
            if dry_run == "client" or (on_server and d.kind not in SERVER_DRY_RUN):
                line = _check_here(d, validation)
            else:
                line = _apply_one(obj, d, validation.value, on_server)
                line += " (server dry run)" if on_server else ""
            console.print(line, highlight=False)
        except VGlobalError as exc:
            _error(d, exc)
            failed = True
    if dry_run != "client" and (jobs := [d for d in docs if submitted_as_job(d)]):
        from vglobal.cli.apply_jobs import ServerSide, apply_jobs

        applied = apply_jobs(
            obj.client,
            jobs,
            lambda d: request_id_for(d.kind, d.body),
            console,
            err_console,
            field_validation=validation.value,
            dry_run=on_server,
            server_side=ServerSide(field_manager, force_conflicts) if server_side else None,
        )
        failed = failed or applied.failed > 0
    if prune and dry_run != "client" and not failed:
        failed = not prune_missing(obj.client, docs, wanted, console, err_console, dry_run=on_server)
    if failed:
        sys.exit(1)
