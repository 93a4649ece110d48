"""The job kinds: one module here per kind, each holding its ``KIND`` record (``record.py``), found
by this package as Kueue's job framework finds its integrations. Every table of kinds elsewhere
(parsers and schemas, served resources, long-running kinds, the CLI's names, the agent's modules)
is derived from ``KINDS``; adding a kind is adding its module here and the agent's module for it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

from vglobal.model.kinds.record import WorkloadKind

__all__ = ["KINDS", "WORKLOADS", "WorkloadKind", "define", "kind_of", "on_define", "printed_as"]

_NOT_KINDS = frozenset({"generic", "reading", "record", "replica_specs", "runtimes"})


def _found() -> tuple[WorkloadKind, ...]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _NOT_KINDS:
            record = importlib.import_module(f"{__name__}.{info.name}").KIND
            assert isinstance(record, WorkloadKind), info.name
            found.append(record)
    return tuple(sorted(found, key=lambda k: k.order))


KINDS: tuple[WorkloadKind, ...] = _found()
# The kinds whose pods a controller in the member cluster makes (all but the Volcano Job).
WORKLOADS: tuple[WorkloadKind, ...] = tuple(k for k in KINDS if not k.agent_makes_pods)
_BY_KEY: dict[tuple[str, str], WorkloadKind] = {k.key: k for k in KINDS}


def kind_of(doc: Mapping[str, Any]) -> WorkloadKind | None:
    """The kind of a manifest by its apiVersion and kind; None for a kind not submitted as a job."""
    return _BY_KEY.get((str(doc.get("apiVersion", "")), str(doc.get("kind", ""))))


_PRINTED: dict[str, str] = {k.shown: k.printed for k in KINDS}
# What else keeps a table of kinds: told of each kind defined after import.
_LISTENERS: list[Callable[[WorkloadKind], None]] = []


def on_define(listener: Callable[[WorkloadKind], None]) -> None:
    """Call ``listener`` with each kind ``define`` adds from now on (a table derived from KINDS)."""
    _LISTENERS.append(listener)


def define(records: list[WorkloadKind]) -> list[WorkloadKind]:
    """Add kinds defined without code (``generic.py``) to every table, as if built in; a kind
    already known (built in, or defined before) is left as it is. Returns those added."""
    global KINDS, WORKLOADS  # noqa: PLW0603 -- read by name as module constants, extended only here
    added = [r for r in records if r.key not in _BY_KEY]
    for record in added:
        _BY_KEY[record.key] = record
        _PRINTED[record.shown] = record.printed
        KINDS = (*KINDS, record)
        WORKLOADS = (*WORKLOADS, record)
        for listener in _LISTENERS:
            listener(record)
    return added


def printed_as(shown: str, namespace: str, name: str) -> str:
    """A job as messages name it, by the kind it was submitted as (``Job.kind``, e.g. Deployment):
    ``deployment.apps/default/inference``; a Volcano Job (or an unknown kind) ``job.batch.volcano.sh/...``."""
    return f"{_PRINTED.get(shown, KINDS[0].printed)}/{namespace}/{name}"
