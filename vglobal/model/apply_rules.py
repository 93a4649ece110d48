"""kubectl's apply on a stored job, as pure rules: what a new manifest changes (field paths), what of
that may change in the job's state (everything while it waits; replicas, labels and annotations
while it runs; labels and annotations once it finished), and which field manager owns each field
(server-side apply's conflicts).

Field paths are written as kubectl writes them: ``spec.tasks[0].template``, ``spec.replicas``,
``metadata.labels[app.kubernetes.io/name]`` (a key that is not a plain name in brackets).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Token = str | int
Path = tuple[Token, ...]

# Set by the hub, never by a manifest: a re-applied manifest that carries them changes nothing.
SERVER_SET = frozenset(
    {"generation", "resourceVersion", "uid", "creationTimestamp", "managedFields", "selfLink"}
)
CLIENT_SIDE_MANAGER = "vglobal-client-side-apply"
SERVER_SIDE_MANAGER = "vglobal"
SCALE_MANAGER = "vglobal-scale"

# Annotations and labels admission reads (queue, placement, gang, priority): they are the job's
# spec, and change only while it waits.
_ADMISSION_KEYS = (
    "volcano.sh/queue-name",
    "scheduling.volcano.sh/queue-name",
    "scheduling.volcano.sh/group-min-member",
    "volcano.sh/network-topology-mode",
    "volcano.sh/network-topology-highest-tier-allowed",
    "ray.io/priority-class-name",
    "volcano.sh/preemptable",
)


def render(path: Path) -> str:
    out = ""
    for t in path:
        if isinstance(t, int):
            out += f"[{t}]"
        elif t.replace("_", "").replace("-", "").isalnum():
            out += f".{t}" if out else t
        else:
            out += f"[{t}]"
    return out


def _leaves(obj: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    if isinstance(obj, Mapping) and obj:
        for k, v in obj.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    else:
        yield path, obj


def fields_of(manifest: Mapping[str, Any]) -> dict[str, tuple[Path, Any]]:
    """Every leaf of the manifest a caller sets, by its rendered path (status and what the hub
    sets in metadata left out)."""
    out: dict[str, tuple[Path, Any]] = {}
    for path, value in _leaves(manifest, ()):
        if not path or path[0] == "status":
            continue
        if path[0] == "metadata" and len(path) > 1 and path[1] in SERVER_SET:
            continue
        out[render(path)] = (path, value)
    return out


def changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Path]:
    """The leaves whose value differs (or that only one side has), in path order."""
    a, b = fields_of(old), fields_of(new)
    keys = sorted(set(a) | set(b))
    return [(a.get(k) or b[k])[0] for k in keys if (k not in a) or (k not in b) or a[k][1] != b[k][1]]


def same(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return not changed(old, new)


# ---- what may change


class Immutable(ValueError):
    """A field that may not change in the job's state; the message names it as Kubernetes does."""


# Per kind (apiVersion group aside), the leaves a running long-running job's replicas are at.
_REPLICAS: dict[str, tuple[Path, ...]] = {
    "Deployment": (("spec", "replicas"),),
    "StatefulSet": (("spec", "replicas"),),
    "LeaderWorkerSet": (("spec", "replicas"),),
}
_RAY_GROUP_FIELDS = ("replicas", "minReplicas", "maxReplicas")


def _replicas_field(kind: str, path: Path) -> bool:
    if path in _REPLICAS.get(kind, ()):
        return True
    return (
        kind == "RayCluster"
        and len(path) == 4
        and path[:2] == ("spec", "workerGroupSpecs")
        and path[3] in _RAY_GROUP_FIELDS
    )


def _free_metadata(path: Path) -> bool:
    """A label or annotation admission does not read."""
    return (
        len(path) == 3
        and path[0] == "metadata"
        and path[1] in ("labels", "annotations")
        and str(path[2]) not in _ADMISSION_KEYS
        and not str(path[2]).startswith("vglobal.io/")
    )


def where(path: Path) -> str:
    """How the refusal names a field: a pod template whole (Kubernetes refuses it whole), any
    other leaf as it is."""
    for i, t in enumerate(path):
        if isinstance(t, str) and t.lower().endswith("template") and i > 0:
            return render(path[: i + 1])
    return render(path)


@dataclass(frozen=True)
class JobState:
    kind: str  # the manifest's kind (Deployment, Job, ...)
    waiting: bool  # its binding is Suspended: nothing of it runs
    finished: bool
    finished_as: str = "once the job finished"  # how a refusal says it


def check_change(old: Mapping[str, Any], new: Mapping[str, Any], state: JobState) -> list[Path]:
    """The changed leaves, when every one may change in this state; else Immutable naming the first
    that may not."""
    for key in ("apiVersion", "kind"):
        if old.get(key) != new.get(key):
            raise Immutable(
                f"{key}: field is immutable (the job is a {old.get('kind')} of {old.get('apiVersion')})"
            )
    paths = changed(old, new)
    if state.waiting:
        return paths
    for p in paths:
        if _free_metadata(p):
            continue
        if not state.finished and _replicas_field(state.kind, p):
            continue
        what = state.finished_as if state.finished else "while the job runs"
        raise Immutable(f"{where(p)}: field is immutable {what}")
    return paths


# ---- field managers


class Conflict(ValueError):
    """Server-side apply would change fields other managers own."""

    def __init__(self, conflicts: list[tuple[str, str]]) -> None:
        self.conflicts = conflicts
        n = len(conflicts)
        listed = "; ".join(f'conflict with "{m}": .{p}' for p, m in conflicts)
        super().__init__(
            f"Apply failed with {n} conflict{'s' if n > 1 else ''}: {listed} "
            "(apply again with --force-conflicts to take these fields over, or leave them out of "
            "the manifest)"
        )


def _set(obj: Any, path: Path, value: Any) -> None:
    for i, t in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(t, int):
            if not isinstance(obj, list) or t >= len(obj):
                return  # a list the applier rewrote: its own items win
            obj = obj[t]
            continue
        if not isinstance(obj, dict):
            return
        obj = obj.setdefault(t, [] if isinstance(nxt, int) else {})
    last = path[-1]
    if isinstance(last, int):
        if isinstance(obj, list) and last < len(obj):
            obj[last] = copy.deepcopy(value)
    elif isinstance(obj, dict):
        obj.setdefault(last, copy.deepcopy(value))


@dataclass(frozen=True)
class Applied:
    manifest: dict[str, Any]  # what is stored
    managers: dict[str, str]  # rendered path -> manager, for every leaf of it


def apply(
    live: Mapping[str, Any],
    managers: Mapping[str, str],
    new: Mapping[str, Any],
    manager: str,
    *,
    server_side: bool = False,
    force: bool = False,
) -> Applied:
    """The manifest to store when ``manager`` applies ``new`` over ``live``, and who then owns each
    field. Client-side apply takes ``new`` as it is. Server-side apply keeps the fields other
    managers own that ``new`` leaves out, and refuses (Conflict) to change a value another manager
    owns unless ``force``."""
    old_f, new_f = fields_of(live), fields_of(new)
    out = copy.deepcopy(dict(new))
    if server_side:
        clashes = [
            (k, managers[k])
            for k, (_, v) in new_f.items()
            if k in old_f and old_f[k][1] != v and managers.get(k, manager) != manager
        ]
        if clashes and not force:
            raise Conflict(sorted(clashes))
        for k, (path, v) in old_f.items():
            if k not in new_f and managers.get(k, manager) != manager:
                _set(out, path, v)
    owners: dict[str, str] = {}
    for k, (_, v) in fields_of(out).items():
        prev = managers.get(k)
        # A value left as it was keeps its manager; one set or changed now is this manager's.
        owners[k] = prev if prev is not None and k in old_f and old_f[k][1] == v else manager
    return Applied(out, owners)


# ---- vglobal scale


def scale(manifest: Mapping[str, Any], replicas: int, task: str = "") -> dict[str, Any]:
    """The manifest with its replicas set (``task``: a Volcano Job's task, a RayCluster's worker
    group); ValueError naming what is missing."""
    if replicas < 0:
        raise ValueError(f"--replicas: {replicas} is negative")
    out = copy.deepcopy(dict(manifest))
    kind = str(out.get("kind", ""))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        raise ValueError("spec: missing")
    if kind in _REPLICAS:
        if task:
            raise ValueError(f"--task: a {kind} has no tasks")
        spec["replicas"] = replicas
        return out
    groups_key, name_key = {"Job": ("tasks", "name"), "RayCluster": ("workerGroupSpecs", "groupName")}.get(
        kind, ("", "")
    )
    groups = spec.get(groups_key) if groups_key else None
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"a {kind or 'manifest'} cannot be scaled (Deployment, StatefulSet, "
                         "LeaderWorkerSet, RayCluster or a Volcano Job's task)")  # fmt: skip
    names = [str(g.get(name_key, "")) for g in groups if isinstance(g, dict)]
    if not task and len(groups) == 1:
        task = names[0]
    if task not in names:
        raise ValueError(f"--task: {task!r} is not one of {', '.join(names)}" if task else
                         f"--task: which one of {', '.join(names)}")  # fmt: skip
    group = groups[names.index(task)]
    group["replicas"] = replicas
    if kind == "RayCluster":
        group["minReplicas"] = min(int(group.get("minReplicas", replicas)), replicas)
        group["maxReplicas"] = max(int(group.get("maxReplicas", replicas)), replicas)
    return out
