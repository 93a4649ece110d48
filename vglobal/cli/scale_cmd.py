"""`vglobal scale KIND/NAME --replicas N`: a running Deployment, StatefulSet, LeaderWorkerSet or
RayCluster (a worker group: ``--task``) changed in place in its cluster, a waiting Volcano Job's task
admitted again with its new size; as kubectl scale, applied by the ``vglobal-scale`` field manager."""

from __future__ import annotations

import click

from vglobal.cli.common import Ctx, console, fail
from vglobal.model.kinds import KINDS, printed_as
from vglobal.sdk import VGlobalError

# What KIND may be written as: kubectl's names, plural and short forms.
_ALIASES = {
    "deployment": "Deployment", "deploy": "Deployment",
    "statefulset": "StatefulSet", "sts": "StatefulSet",
    "leaderworkerset": "LeaderWorkerSet", "lws": "LeaderWorkerSet",
    "raycluster": "RayCluster",
    "job": "VolcanoJob", "vcjob": "VolcanoJob", "volcanojob": "VolcanoJob",
}  # fmt: skip


def kind_named(text: str) -> str:
    """The kind ``Job.kind`` shows for a name users type (``deploy``, ``statefulsets``)."""
    word = text.lower().split(".", 1)[0]
    shown = _ALIASES.get(word) or _ALIASES.get(word.removesuffix("s"))
    if shown is None:
        known = sorted({k.shown for k in KINDS if k.shown in _ALIASES.values()})
        raise click.BadParameter(f'"{text}": not a kind that scales ({", ".join(known)})')
    return shown


@click.command()
@click.argument("target", metavar="KIND/NAME")
@click.option("--replicas", type=int, required=True, help="The new number of replicas.")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--task", default="", help="A Volcano Job's task or a RayCluster's worker group.")
@click.option(
    "--dry-run",
    "dry_run",
    type=click.Choice(["none", "server"]),
    default="none",
    show_default=True,
    help="server: the hub checks and answers, stores nothing.",
)
@click.pass_obj
def scale(obj: Ctx, target: str, replicas: int, namespace: str, task: str, dry_run: str) -> None:
    """Set the replicas of a job (kubectl scale): in place in its cluster while it runs, scale-ups
    admitted through its queue as any pods beyond a gang."""
    kind_text, sep, name = target.partition("/")
    if not sep or not name:
        fail(f'KIND/NAME: expected e.g. deployment/inference, got "{target}"')
    shown = kind_named(kind_text)
    try:
        job = obj.client.get_job(name, namespace)
        if job.kind != shown:
            fail(f"{printed_as(shown, namespace, name)}: not found (a {job.kind} has that name)")
        got = obj.client.scale_job(name, replicas, namespace, task=task, dry_run=dry_run == "server")
    except VGlobalError as exc:
        fail(str(exc))
    said = "scaled" if got.result == "configured" else got.result
    suffix = " (server dry run)" if dry_run == "server" else ""
    console.print(f"{printed_as(shown, namespace, name)} {said}{suffix}", highlight=False)
