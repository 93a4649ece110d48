"""Which tasks' pods are never preemption or reclaim victims (``volcano.sh/preemptable``).

Volcano's job controller copies the job's annotation and label over the pod template's, and its
scheduler reads the pod's annotation first, then its label; a value Go's strconv.ParseBool cannot
read counts as "not preemptable", no value as preemptable. The kinds that hold their pods until
deleted (RayCluster, LeaderWorkerSet, Deployment, StatefulSet) are not preemptable without a value:
only ``"true"`` on the object (or its pod template) lets their pods go."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PREEMPTABLE_KEY = "volcano.sh/preemptable"
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def pod_preemptable(annotation: str | None, label: str | None, default: bool = True) -> bool:
    value = annotation if annotation is not None else label
    return default if value is None else value in _GO_TRUE


def unpreemptable_tasks(
    job_annotation: str | None,
    job_label: str | None,
    task_annotations: Mapping[str, str],
    task_labels: Mapping[str, str],
    tasks: Iterable[str],
    *,
    default: bool = True,
) -> frozenset[str]:
    """The tasks whose pods are pinned; ``task_*`` hold the templates' values by task name;
    ``default``: whether a pod without a value is preemptable (False for the long-running kinds)."""
    return frozenset(
        t
        for t in tasks
        if not pod_preemptable(
            job_annotation if job_annotation is not None else task_annotations.get(t),
            job_label if job_label is not None else task_labels.get(t),
            default,
        )
    )


NEVER = "Never"


def preemption_policy(class_policy: str, pod_policies: Iterable[object], tasks: int) -> str:
    """The policy the hub preempts and reclaims by: ``Never`` only when every one of the job's
    ``tasks`` says Never. A task says what its pod template's own ``spec.preemptionPolicy`` says
    (``pod_policies``: those of the templates that set one), else what the job's PriorityClass
    says. Volcano's preempt and reclaim skip a pod whose policy is Never and go on for the job's
    other pods, so a job one of whose tasks may preempt still does."""
    own = list(pod_policies)
    if any(p != NEVER for p in own):
        return "PreemptLowerPriority" if class_policy == NEVER else class_policy
    if len(own) >= tasks and own:
        return NEVER  # every task sets Never itself
    return class_policy


def template_preemption_policies(templates: Iterable[Mapping[str, object]]) -> list[object]:
    """Each pod template's own ``spec.preemptionPolicy``, where it sets one."""
    out: list[object] = []
    for t in templates:
        spec = t.get("spec")
        if isinstance(spec, Mapping) and "preemptionPolicy" in spec:
            out.append(spec["preemptionPolicy"])
    return out
