"""What a job kind IS, as one record: where it lives in the API, what users call it, how its
manifest reads into the ``Job`` admission sees, and the two facts of its pods admission needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.model.job import Job
from vglobal.model.k8s import Model


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    api_version: str  # group/version
    kind: str
    plural: str  # the API resource's plural name
    printed: str  # as kubectl prints it: "deployment.apps"
    reader: Callable[[Mapping[str, Any]], Job]  # manifest -> the job admission sees
    schema: type[Model]  # the manifest's fields, for strict field validation
    # Its place in the lists users read (supported kinds, the agent's log): a new kind takes the next.
    order: int
    long_running: bool = False  # its pods run until the object is deleted (not preemptable by default)
    grouped: bool = False  # its pods come in groups, each placed whole (a job of it is evicted whole only)
    agent_makes_pods: bool = False  # the agent makes its pods (a Volcano Job), not a controller
    listed_as: str = ""  # the kind as jobs show it when it differs (a Volcano Job is "VolcanoJob")
    # A kind defined without code (``generic.py``): its paths, gang and status rules.
    definition: Any = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.api_version, self.kind)

    @property
    def group(self) -> str:
        return self.api_version.split("/", 1)[0] if "/" in self.api_version else ""

    @property
    def version(self) -> str:
        return self.api_version.rsplit("/", 1)[-1]

    @property
    def resource(self) -> str:
        """``<plural>.<group>``, as its CRD is named, which a controller in the member cluster must
        serve; "" for a kind whose pods the agent makes itself."""
        if self.agent_makes_pods:
            return ""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def shown(self) -> str:
        """The kind as ``vglobal get jobs`` shows it (batch/v1 Job is ``Job``)."""
        return self.listed_as or self.kind
