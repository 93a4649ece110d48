"""`vglobal get|describe|delete configmap|secret`: the objects jobs depend on, as the hub holds them.
A Secret shows its keys and their sizes only: no call returns its values."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from vglobal.api.v1 import objects_pb2
from vglobal.sdk import Client

# What the CLI calls each kind (kubectl's names and short names) -> the API's kind
KINDS = {
    "configmap": "ConfigMap",
    "configmaps": "ConfigMap",
    "cm": "ConfigMap",
    "secret": "Secret",
    "secrets": "Secret",
}
PRINTED = {"ConfigMap": "configmap", "Secret": "secret"}


def object_row(o: objects_pb2.DependencyObjectView) -> dict[str, Any]:
    return {
        "namespace": o.namespace,
        "name": o.name,
        "kind": o.kind,
        "type": o.type or "-",
        "data": len(o.keys),
        "bytes": sum(k.size for k in o.keys),
        "revision": o.revision,
        "updated": o.updated_at.ToJsonString(),
    }


def lister(kind: str) -> Any:
    return lambda client, namespace: client.list_objects(kind, namespace)


def describe_object(client: Client, kind: str, name: str, namespace: str, console: Console) -> None:
    o = client.get_object(KINDS[kind], name, namespace)
    lines = [
        ("Name", o.name),
        ("Namespace", o.namespace),
        ("Kind", o.kind),
        *([("Type", o.type)] if o.type else []),
        ("Labels", ", ".join(f"{k}={v}" for k, v in sorted(o.labels.items())) or "<none>"),
        ("Immutable", "true" if o.immutable else "false"),
        ("Revision", str(o.revision)),
        ("Updated", o.updated_at.ToJsonString()),
        ("Used by", ", ".join(o.used_by) or "<no unfinished job>"),
    ]
    width = max(len(k) for k, _ in lines) + 1
    for k, v in lines:
        console.print(f"{k + ':':<{width}} {v}", highlight=False, soft_wrap=True)
    console.print("Data", highlight=False)
    console.print("====", highlight=False)
    for key in o.keys:
        if key.name in o.data:  # a ConfigMap's text, as kubectl describe shows it
            console.print(f"{key.name}:\n----\n{o.data[key.name]}\n", highlight=False, soft_wrap=True)
        else:
            console.print(f"{key.name}:  {key.size} bytes", highlight=False)


@click.command("secret-key")
def secret_key() -> None:
    """Print a new key for --secret-keys-file (Fernet). Rotation: put it first in the file, restart
    the hub (it seals every stored Secret under the first key), then drop the old key."""
    from vglobal.hub.secret_box import generate_key

    click.echo(generate_key())
