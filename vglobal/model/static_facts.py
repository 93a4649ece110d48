"""The parts of a job's manifest admission reads every time it sees the job new, taken once at submit
and stored beside it (the ``facts`` column), so a snapshot no longer walks each manifest.

Each entry is exactly what one Postgres query over the stored manifest gives (SQL/JSON paths in lax
mode, ``#>`` and ``->``): migration 0017 computed the column for older rows with those queries, so
a job stored before it and one submitted after are decided alike. Entries that are empty (an empty
path result, a missing or null value) are left out: most jobs have none but their kind.

Keys: ``a``/``av`` the tasks whose template annotates ``volcano.sh/preemptable`` and those values,
``l``/``lv`` the same for its label; ``ja``/``jl`` the job's own annotation and label; ``api`` and
``kind``; ``pp`` the templates' ``spec.preemptionPolicy``; ``anti`` their required pod anti-affinity
terms; ``ln``/``lt`` the tasks whose template has labels and those labels; ``pcs`` each task's own
``priorityClassName`` by task name (its value is read with the PriorityClass, which can change).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from vglobal.model.pod_anti_affinity import REQUIRED
from vglobal.model.preemptable import PREEMPTABLE_KEY
from vglobal.model.queue_tuning import CHECKPOINT_ANNOTATION


def _member(items: Iterable[Any], key: str) -> Iterator[Any]:
    """``.key`` in lax mode: an array is unwrapped one level, anything not an object gives nothing."""
    for v in items:
        for e in v if isinstance(v, list) else (v,):
            if isinstance(e, dict) and key in e:
                yield e[key]


def _path(items: Iterable[Any], *keys: str) -> list[Any]:
    for k in keys:
        items = _member(items, k)
    return list(items)


def _each(items: Iterable[Any]) -> list[Any]:
    """``[*]`` in lax mode: an array's elements; anything else is taken as an array of itself."""
    return [e for v in items for e in (v if isinstance(v, list) else (v,))]


def _having(tasks: list[Any], *keys: str) -> list[Any]:
    """``? (exists(@.keys))`` in lax mode (an array is unwrapped one level first)."""
    return [e for t in tasks for e in (t if isinstance(t, list) else (t,)) if _path([e], *keys)]


def _at(doc: Any, *keys: str) -> Any:
    """``#>`` with a path of keys: None where a step is not an object holding the key."""
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return None
        doc = doc[k]
    return doc


def _text(v: Any) -> str | None:
    """``->>``/``#>>``: a string as itself, JSON null as NULL, anything else as its JSON text."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v)


def _priority_class_names(manifest: dict[str, Any]) -> dict[str, str]:
    tasks = _at(manifest, "spec", "tasks")
    out: dict[str, str] = {}
    for t in tasks if isinstance(tasks, list) else ():
        name = _text(t.get("name")) if isinstance(t, dict) else None
        pc = _text(_at(t, "template", "spec", "priorityClassName"))
        if name is not None and pc is not None:
            out[name] = pc
    return out


def manifest_facts(manifest: dict[str, Any]) -> dict[str, Any]:
    """The facts of this manifest (module doc), empty entries left out."""
    tasks = _each(_path([manifest], "spec", "tasks"))
    flagged = {
        key: _having(tasks, "template", "metadata", where, PREEMPTABLE_KEY)
        for key, where in (("a", "annotations"), ("l", "labels"))
    }
    labelled = _having(tasks, "template", "metadata", "labels")
    arrays = {
        "a": _path(flagged["a"], "name"),
        "av": _path(flagged["a"], "template", "metadata", "annotations", PREEMPTABLE_KEY),
        "l": _path(flagged["l"], "name"),
        "lv": _path(flagged["l"], "template", "metadata", "labels", PREEMPTABLE_KEY),
        "pp": _path(tasks, "template", "spec", "preemptionPolicy"),
        "anti": _each(_path(tasks, "template", "spec", "affinity", "podAntiAffinity", REQUIRED)),
        "ln": _path(labelled, "name"),
        "lt": _path(labelled, "template", "metadata", "labels"),
        "pcs": _priority_class_names(manifest),
    }
    values = {
        "ja": _at(manifest, "metadata", "annotations", PREEMPTABLE_KEY),
        "jl": _at(manifest, "metadata", "labels", PREEMPTABLE_KEY),
        "ck": _at(manifest, "metadata", "annotations", CHECKPOINT_ANNOTATION),
        "api": manifest.get("apiVersion"),
        "kind": manifest.get("kind"),
    }
    return {
        **{k: v for k, v in values.items() if v is not None},
        **{k: v for k, v in arrays.items() if v},
    }
