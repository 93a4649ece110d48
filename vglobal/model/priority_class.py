"""PriorityClasses (``scheduling.k8s.io/v1``): a job's priorityClassName resolves to their value."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field, StrictBool, StrictStr

from vglobal.model.errors import Problems
from vglobal.model.k8s import OBJECT_FIELDS, Int32, Metadata, Model, check_name, validate_model

if TYPE_CHECKING:
    from vglobal.model.job import Job

API_VERSION = "scheduling.k8s.io/v1"
KIND = "PriorityClass"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Kubernetes keeps values above this for classes named "system-..." (system-node-critical etc.).
HIGHEST_USER_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass(frozen=True, kw_only=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class PriorityClassManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    value: Int32
    global_default: StrictBool = False
    preemption_policy: StrictStr = "PreemptLowerPriority"
    description: StrictStr = ""


def parse_priority_class(doc: Mapping[str, Any]) -> PriorityClass:
    """Validate one PriorityClass document; raises ManifestError naming every bad field."""
    m = validate_model(PriorityClassManifest, doc)
    p = Problems()
    name = m.metadata.name
    check_name(p, "metadata.name", name, label=False)
    if not INT32_MIN <= m.value <= INT32_MAX:
        p.add("value", f"must be a 32-bit integer, not {m.value}")
    elif m.value > HIGHEST_USER_PRIORITY and not name.startswith("system-"):
        p.add("value", f"must not be more than {HIGHEST_USER_PRIORITY} for a class not named system-*")
    if m.preemption_policy not in PREEMPTION_POLICIES:
        p.add("preemptionPolicy", f'must be "PreemptLowerPriority" or "Never", not "{m.preemption_policy}"')
    p.raise_if_any()
    return PriorityClass(
        name=name,
        value=m.value,
        global_default=m.global_default,
        preemption_policy=m.preemption_policy,
        raw=copy.deepcopy(dict(doc)),
    )


class ClassRef(Protocol):
    """A stored or applied PriorityClass, as a job's priority is resolved from it."""

    @property
    def value(self) -> int: ...

    @property
    def global_default(self) -> bool: ...


class UnknownPriorityClass(ValueError):
    """A job names a PriorityClass that does not exist; the message names the field."""


def check_task_classes(job: Job, known: Callable[[str], bool]) -> None:
    """A task's own priorityClassName must name a PriorityClass, as the job's must."""
    for i, t in enumerate(job.tasks):
        if t.priority_class_name and not known(t.priority_class_name):
            raise UnknownPriorityClass(
                f'spec.tasks[{i}].template.spec.priorityClassName: priority class "{t.priority_class_name}" '
                "not found (apply a scheduling.k8s.io/v1 PriorityClass first)"
            )


def job_priority(
    job: Job, lookup: Callable[[str], ClassRef | None], every: Callable[[], Iterable[ClassRef]]
) -> int:
    """The job's priority at submit: its PriorityClass's value, else the global default's (the
    highest if several), else 0. UnknownPriorityClass when it or a task names a missing class."""
    check_task_classes(job, lambda name: lookup(name) is not None)
    if job.priority_class_name:
        pc = lookup(job.priority_class_name)
        if pc is None:
            raise UnknownPriorityClass(
                f'spec.priorityClassName: priority class "{job.priority_class_name}" not found '
                "(apply a scheduling.k8s.io/v1 PriorityClass first)"
            )
        return pc.value
    defaults = [pc for pc in every() if pc.global_default]
    return max(defaults, key=lambda pc: pc.value).value if defaults else 0
