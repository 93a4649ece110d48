"""The servicers' side of authorization: the Guard let the caller in for the kind of call; here each
call checks the queue or cluster it touches, and lists keep to what the caller may read."""

from __future__ import annotations

from vglobal.hub.auth.authenticator import PermissionDenied
from vglobal.hub.auth.policy import Action, decide, everywhere, may
from vglobal.hub.guard import current_principal


def who() -> str:
    """The caller as the audit trail names it."""
    return current_principal().audit_name


def require(action: Action, *, queue: str | None = None, cluster: str | None = None) -> None:
    denial = decide(current_principal(), action, queue=queue, cluster=cluster)
    if denial is not None:
        raise PermissionDenied(denial)


def visible(action: Action, queues: list[str]) -> list[str] | None:
    """Of ``queues``, those the caller may ``action``; None when it may every queue (no filter)."""
    principal = current_principal()
    if everywhere(principal, action):
        return None
    return [q for q in queues if may(principal, action, queue=q)]
