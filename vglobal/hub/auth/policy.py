"""The role rules: may this principal do this action on this queue or cluster? A pure decision.

Roles follow Volcano's read-only / read-write roles per tenant, at the federation level: ``admin``
may do everything users do, ``operator`` manages queues, priority classes and clusters and reads
everything, ``submitter`` submits, cancels, deletes and reads jobs in its queues, ``tenant`` does
what a submitter does and also applies and deletes sub-queues under its queues (within their
limits), ``viewer`` reads (optionally only some queues), and ``agent`` speaks AgentService for the
clusters it is bound to.
A user role never makes a caller a cluster's agent: only an ``agent`` binding or a certificate does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase


class Role(StrEnum):
    admin = "admin"
    operator = "operator"
    submitter = "submitter"
    viewer = "viewer"
    tenant = "tenant"
    agent = "agent"


class Action(StrEnum):
    """What a call does, phrased to complete "may not ..." in a denial."""

    read_jobs = "read jobs"
    read_logs = "read logs"  # the output of a job's pods (JobService.StreamLogs)
    submit_jobs = "submit jobs"
    cancel_jobs = "cancel jobs"
    delete_jobs = "delete jobs"
    read_queues = "read queues"
    manage_queues = "manage queues"
    # Apply and delete queues under a queue one may manage sub-queues of (a tenant's own tree).
    manage_subqueues = "manage sub-queues"
    read_priority_classes = "read priority classes"
    manage_priority_classes = "manage priority classes"
    read_namespaces = "read namespaces"
    manage_namespaces = "manage namespaces"  # admin only: they choose the queue of jobs naming none
    read_clusters = "read clusters"
    read_objects = "read configmaps and secrets"  # names, keys and sizes; never a Secret's values
    manage_objects = "manage configmaps and secrets"
    manage_clusters = "manage clusters"
    delete_clusters = "delete clusters"  # admin only: a cluster's record and its jobs' places go
    connect_agent = "connect as an agent"


# Actions that a binding's ``queues`` globs narrow down.
QUEUE_SCOPED = frozenset(
    {
        Action.read_jobs,
        Action.read_logs,
        Action.submit_jobs,
        Action.cancel_jobs,
        Action.delete_jobs,
        Action.read_queues,
        Action.manage_subqueues,
    }
)
# Reading logs comes with reading jobs; a binding's ``logs: false`` takes it away (Grant.without).
READS = frozenset(
    {
        Action.read_jobs,
        Action.read_logs,
        Action.read_queues,
        Action.read_priority_classes,
        Action.read_namespaces,
        Action.read_clusters,
        Action.read_objects,
    }
)
ROLE_ACTIONS: dict[Role, frozenset[Action]] = {
    Role.admin: frozenset(Action) - {Action.connect_agent},
    Role.operator: READS
    | {Action.manage_queues, Action.manage_subqueues, Action.manage_priority_classes, Action.manage_clusters},
    Role.submitter: READS
    | {Action.submit_jobs, Action.cancel_jobs, Action.delete_jobs, Action.manage_objects},
    Role.viewer: READS,
    Role.tenant: READS
    | {
        Action.submit_jobs,
        Action.cancel_jobs,
        Action.delete_jobs,
        Action.manage_objects,
        Action.manage_subqueues,
    },
    Role.agent: frozenset({Action.connect_agent}),
}


# In a grant's clusters: every cluster (only the open mode of a hub without an auth config uses it).
ANY_CLUSTER = "*"


@dataclass(frozen=True)
class Grant:
    """One role binding as it applies to a principal; ``queues`` None means every queue."""

    role: Role
    queues: tuple[str, ...] | None = None
    clusters: tuple[str, ...] = ()
    without: frozenset[Action] = frozenset()  # what the role would allow but the binding does not

    def describe(self) -> str:
        if self.role is Role.agent:
            return f"agent of {', '.join(self.clusters)}"
        but = f" without {', '.join(sorted(a.value for a in self.without))}" if self.without else ""
        if self.queues is None:
            return self.role.value + but
        return f"{self.role.value} on queues {', '.join(self.queues)}{but}"


@dataclass(frozen=True)
class Principal:
    """Who calls: a user (by token) or a cluster (by certificate or agent token)."""

    name: str
    grants: tuple[Grant, ...]
    kind: str = "user"

    def describe(self) -> str:
        roles = "; ".join(g.describe() for g in self.grants) or "no role"
        return f'{self.kind} "{self.name}" ({roles})'

    @property
    def audit_name(self) -> str:
        """How the audit trail names it: ``alice`` or ``cluster:gpu-east``."""
        return self.name if self.kind == "user" else f"{self.kind}:{self.name}"

    def agent_clusters(self) -> tuple[str, ...]:
        return tuple(c for g in self.grants if g.role is Role.agent for c in g.clusters)


def permits(grant: Grant, action: Action, *, queue: str | None = None, cluster: str | None = None) -> bool:
    """``queue``/``cluster`` None asks whether the grant allows the action on some queue or cluster."""
    if action not in ROLE_ACTIONS[grant.role] or action in grant.without:
        return False
    if action is Action.connect_agent:
        return cluster is None or cluster in grant.clusters or ANY_CLUSTER in grant.clusters
    if action in QUEUE_SCOPED and queue is not None and grant.queues is not None:
        return any(fnmatchcase(queue, glob) for glob in grant.queues)
    return True


def may(
    principal: Principal, action: Action, *, queue: str | None = None, cluster: str | None = None
) -> bool:
    return any(permits(g, action, queue=queue, cluster=cluster) for g in principal.grants)


def everywhere(principal: Principal, action: Action) -> bool:
    """Whether some grant allows ``action`` on every queue (so a list needs no queue filter)."""
    return any(
        action in ROLE_ACTIONS[g.role]
        and action not in g.without
        and (g.queues is None or action not in QUEUE_SCOPED)
        for g in principal.grants
    )


def decide(
    principal: Principal, action: Action, *, queue: str | None = None, cluster: str | None = None
) -> str | None:
    """None when allowed; otherwise the denial, naming the principal's roles and the queue or cluster."""
    if may(principal, action, queue=queue, cluster=cluster):
        return None
    what = f"{action.value}"
    if queue is not None and action in QUEUE_SCOPED:
        what += f' in queue "{queue}"'
    elif cluster is not None and action is Action.connect_agent:
        what = f'connect as the agent of cluster "{cluster}"'
    return f"{principal.describe()} may not {what}"
