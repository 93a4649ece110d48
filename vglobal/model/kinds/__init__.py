"""The job kinds: one module here per kind, each holding its ``KIND`` record (``record.py``), found
by this package as Kueue's job framework finds its integrations. Every table of kinds elsewhere
(parsers and schemas, served resources, long-running kinds, the CLI's names, the agent's modules)
is derived from ``KINDS``; adding a kind is adding its module here and the agent's module for it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.record import WorkloadKind

__all__ = ["KINDS", "WORKLOADS", "WorkloadKind", "kind_of", "printed_as"]

_NOT_KINDS = frozenset({"reading", "record", "replica_specs", "runtimes"})


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
_BY_KEY: Mapping[tuple[str, str], WorkloadKind] = {k.key: k for k in KINDS}


def kind_of(doc: Mapping[str, Any]) -> WorkloadKind | None:
    """The kind of a manifest by its apiVersion and kind; None for a kind not submitted as a job."""
    return _BY_KEY.get((str(doc.get("apiVersion", "")), str(doc.get("kind", ""))))


_PRINTED: Mapping[str, str] = {k.shown: k.printed for k in KINDS}


def printed_as(shown: str, namespace: str, name: str) -> str:
    """A job as messages name it, by the kind it was submitted as (``Job.kind``, e.g. Deployment):
    ``deployment.apps/default/inference``; a Volcano Job (or an unknown kind) ``job.batch.volcano.sh/...``."""
    return f"{_PRINTED.get(shown, KINDS[0].printed)}/{namespace}/{name}"
