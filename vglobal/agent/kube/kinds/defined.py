"""A kind defined without code (``vglobal.model.kinds.generic``): its pod templates are where its
definition's paths say, each labelled with its pod set's name as role; its run is what the
definition's status rules say of the object. Re-applied, only its labels and annotations follow."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload
from vglobal.model.kinds import WorkloadKind
from vglobal.model.kinds.generic import KindDefinition, at


@dataclass(frozen=True, slots=True)
class Defined(Workload):
    @property
    def definition(self) -> KindDefinition:
        d = self.record.definition
        assert isinstance(d, KindDefinition)
        return d

    def templates(self, obj: dict[str, Any]) -> list[Template]:
        out = []
        for ps in self.definition.pod_sets:
            tmpl = at(obj, ps.template)
            if isinstance(tmpl, dict):
                out.append((ps.name, tmpl))
        return out

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        return self.definition.phase(obj), ""

    def scale_patch(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        patch = Workload.scale_patch(self, raw)
        patch.pop("spec", None)  # its replicas are where its definition says, not spec.replicas
        return patch


def adapter(record: WorkloadKind) -> Defined:
    """The agent's module of a defined kind: what the cluster needs is what its definition says."""
    assert isinstance(record.definition, KindDefinition)
    return Defined(record, record.definition.needs)
