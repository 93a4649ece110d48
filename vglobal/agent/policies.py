"""Which lifecycle policy answers an event: Volcano's ``applyPolicies``.

Task policies are looked at before job policies; within a list the first match wins. A policy
matches by event (``*`` is any event) or by the exit code of a failed pod. ``PodPending`` only
ever matches a policy with a timeout: without one a pending pod is just waiting. No match means
SyncJob (the pod simply counts as what it is).
"""

from __future__ import annotations

from dataclasses import dataclass

from vglobal.model.job import Job, Policy

SYNC_JOB = "SyncJob"
ANY_EVENT = "*"


@dataclass(frozen=True, slots=True)
class Request:
    """One thing that happened to a job, with what it happened to."""

    event: str
    task: str | None = None
    pod: str | None = None  # pod name
    pod_uid: str | None = None
    exit_code: int | None = None
    reason: str = ""  # the cluster's reason for a failed or evicted pod (OOMKilled, Evicted)


@dataclass(frozen=True, slots=True)
class Decision:
    action: str
    timeout: float | None = None
    policy: Policy | None = None


def _matches(policy: Policy, req: Request) -> bool:
    if policy.events and req.event and (req.event in policy.events or ANY_EVENT in policy.events):
        return req.event != "PodPending" or policy.timeout_seconds is not None
    # exit code 0 is refused by validation, so a pod without an exit code never matches
    return policy.exit_code is not None and req.exit_code is not None and policy.exit_code == req.exit_code


def decide(job: Job, req: Request) -> Decision:
    lists: list[tuple[Policy, ...]] = []
    if req.task is not None:
        lists += [t.policies for t in job.tasks if t.name == req.task][:1]
    lists.append(job.policies)
    for policies in lists:
        for policy in policies:
            if _matches(policy, req):
                return Decision(policy.action, policy.timeout_seconds, policy)
    return Decision(SYNC_JOB)
