"""The handlers' side of authorization: the Guard let the caller in for the kind of call and set
who it is (``PRINCIPAL``); here each call checks the queue or cluster it touches, and lists keep to
what the caller may read."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar

from vglobal.hub.auth.authenticator import PermissionDenied
from vglobal.hub.auth.policy import Action, Principal, decide, everywhere, may

# Who makes the call being served: the Guard sets it for the handler's duration.
PRINCIPAL: ContextVar[Principal | None] = ContextVar("vglobal_principal", default=None)
# Asks again who the caller is, with the credentials it came with: a long stream calls it after the
# auth config changed (it raises if the caller is gone or may no longer make the call).
RECHECK: ContextVar[Callable[[], Principal] | None] = ContextVar("vglobal_recheck", default=None)


def current_principal() -> Principal:
    """Who makes the call being served (set by the Guard for the handler's duration)."""
    principal = PRINCIPAL.get()
    if principal is None:
        raise RuntimeError("no principal: the call did not pass the Guard")
    return principal


def current_recheck() -> Callable[[], Principal]:
    """The caller of the call being served, identified again now (see ``RECHECK``)."""
    recheck = RECHECK.get()
    if recheck is None:
        raise RuntimeError("no caller: the call did not pass the Guard")
    return recheck


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


def can(action: Action, queues: Iterable[str]) -> bool:
    """Whether the caller may ``action`` in every one of ``queues`` (a list keeps what it can read)."""
    principal = current_principal()
    return all(may(principal, action, queue=q) for q in queues)
