"""Who is calling: a bearer token checked against the auth config, or a client certificate's cluster.

Without an auth config the hub is open (every caller may do everything): the hub allows that only on
loopback or with --insecure. The config is replaced on reload() only when the new file is valid.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import grpc

from vglobal.hub.auth.config import AuthConfig, load_auth_config
from vglobal.hub.auth.identity import clusters_named
from vglobal.hub.auth.policy import ANY_CLUSTER, Grant, Principal, Role
from vglobal.hub.auth.tokens import TokenTable
from vglobal.hub.errors import HubError

log = logging.getLogger(__name__)

OPEN = Principal("anonymous", (Grant(Role.admin), Grant(Role.agent, clusters=(ANY_CLUSTER,))), kind="open")
BEARER = "bearer "
MAX_TOKEN = 4096  # longer than any token `vglobal certs` makes by far; refused before any lookup


class Unauthenticated(HubError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(HubError):
    code = grpc.StatusCode.PERMISSION_DENIED


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``authorization: Bearer TOKEN`` header; None without the header."""
    if authorization is None:
        return None
    if not authorization[: len(BEARER)].lower() == BEARER or not authorization[len(BEARER) :].strip():
        raise Unauthenticated('authorization: expected "Bearer TOKEN"')
    token = authorization[len(BEARER) :].strip()
    if len(token) > MAX_TOKEN:
        raise Unauthenticated(f"the bearer token is over {MAX_TOKEN} characters: no such token is known")
    return token


def cluster_principal(name: str) -> Principal:
    return Principal(name, (Grant(Role.agent, clusters=(name,)),), kind="cluster")


class Authenticator:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._tokens: TokenTable[Principal] = TokenTable([])
        self.generation = 0  # counts reloads: a stream whose caller was admitted before asks again
        if path is not None:
            self._install(load_auth_config(path))  # a bad file at start stops the hub

    @property
    def open(self) -> bool:
        return self.path is None

    def _install(self, config: AuthConfig) -> None:
        table = TokenTable((u.token_sha256, config.principal(u)) for u in config.users)
        with self._lock:
            self._tokens = table
            self.generation += 1

    def reload(self) -> None:
        """Read the file again; on any problem the old config stays and the error is raised."""
        if self.path is None:
            return
        self._install(load_auth_config(self.path))

    def authenticate(self, *, token: str | None, cluster_uris: Sequence[str], agent_call: bool) -> Principal:
        """The caller; a client certificate's cluster is preferred on AgentService, a token elsewhere."""
        clusters = clusters_named(cluster_uris)
        if len(clusters) > 1:
            raise Unauthenticated("the client certificate names more than one cluster")
        by_cert = cluster_principal(clusters[0]) if clusters else None
        if by_cert is not None and (agent_call or token is None):
            return by_cert
        if token is not None and not self.open:
            with self._lock:
                tokens = self._tokens
            found = tokens.find(token)
            if found is None:
                raise Unauthenticated("the bearer token is not known to this hub")
            return found
        if self.open:
            return OPEN
        raise Unauthenticated(
            "no credentials: send authorization: Bearer TOKEN (vglobal --token, VGLOBAL_TOKEN)"
            + (" or connect with the cluster's client certificate" if agent_call else "")
        )
