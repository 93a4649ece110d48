"""The agent's module of each workload kind (``base.py``'s protocol), one per kind, found by this
package; each names the record of its kind in ``vglobal.model.kinds``. A kind whose pods the agent
makes itself (the Volcano Job) has none: the pod tracker runs it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from vglobal.agent.kube.kinds.base import Workload
from vglobal.agent.kube.kinds.defined import adapter
from vglobal.model import kinds

__all__ = ["ADAPTERS", "KINDS", "Workload", "kind_of"]


def _found() -> dict[tuple[str, str], Workload]:
    found: dict[tuple[str, str], Workload] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("base", "defined", "replica_specs"):
            adapter = importlib.import_module(f"{__name__}.{info.name}").ADAPTER
            assert isinstance(adapter, Workload), info.name
            found[adapter.record.key] = adapter
    return found


# (apiVersion, kind) -> the kind's module; kinds defined before this import by the generic one
ADAPTERS: dict[tuple[str, str], Workload] = _found()
ADAPTERS.update({k.key: adapter(k) for k in kinds.WORKLOADS if k.definition is not None})
# The workload kinds the agent runs, in the records' order.
KINDS: tuple[Workload, ...] = tuple(ADAPTERS[k.key] for k in kinds.WORKLOADS if k.key in ADAPTERS)


def _defined(record: kinds.WorkloadKind) -> None:
    """A kind defined without code: run by the generic module, as if built in."""
    global KINDS  # noqa: PLW0603 -- read by name as a module constant, extended only here
    ADAPTERS[record.key] = adapter(record)
    KINDS = (*KINDS, ADAPTERS[record.key])


kinds.on_define(_defined)


def kind_of(raw: Mapping[str, Any]) -> Workload | None:
    """The workload kind of a manifest; None for a Volcano Job (the agent makes its pods)."""
    record = kinds.kind_of(raw)
    return None if record is None else ADAPTERS.get(record.key)
