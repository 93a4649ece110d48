"""What an agent tells its operator when the hub refuses or cannot be reached: the status code's
meaning for an agent, which flag or file to check, and how long until the next attempt.

A refusal (credentials, identity) is not fixed by retrying at once: it waits longer between
attempts than a hub that is merely away, but never longer than ``REFUSED_MAX`` seconds, so an
operator who mends the hub's config sees the agent back within that.
"""

from __future__ import annotations

import grpc

from vglobal.dial import Dial

REFUSED_MAX = 30.0  # seconds between attempts at most while the hub refuses this agent
# What gRPC says when the two ends do not speak the same protocol: a TLS handshake that fails, or
# (before a stream ever opened) a connection the hub accepts and then closes, as a TLS port does
# to a plaintext client or the agents' port to a client without a certificate.
_TLS_WORDS = ("ssl", "tls", "handshake", "certificate", "wrong_version", "http1.x", "http/1", "socket closed")

_C = grpc.StatusCode
REFUSALS = frozenset({_C.UNAUTHENTICATED, _C.PERMISSION_DENIED, _C.FAILED_PRECONDITION, _C.INVALID_ARGUMENT})


def _credentials(dial: Dial) -> str:
    if dial.cert is not None:
        return f"the client certificate {dial.cert} (--cert/--key)"
    if dial.token:
        return "the bearer token (--token, --token-file or VGLOBAL_TOKEN / VGLOBAL_TOKEN_FILE)"
    return "no credentials (neither --token/--token-file nor --cert/--key is given)"


def looks_like_tls(details: str) -> bool:
    low = details.lower()
    return any(w in low for w in _TLS_WORDS)


def advice(code: grpc.StatusCode | None, details: str, dial: Dial, cluster: str) -> str:
    """What is wrong and what to do, for the status an agent stream to ``dial`` ended with."""
    said = f" ({details})" if details else ""
    if code is _C.UNAUTHENTICATED:
        return (
            f"the hub refused this agent's credentials{said}: it sent {_credentials(dial)}; check it "
            "against the hub's --auth-config (an agent token) or --client-ca (the CA of a certificate)"
        )
    if code is _C.PERMISSION_DENIED:
        return (
            f'the hub does not let this identity speak for cluster "{cluster}"{said}: the cluster name '
            "(--name, else the SimCluster's metadata.name or the kubeconfig context) must be the one its "
            "token is bound to in the hub's --auth-config, or its certificate's URI SAN "
            f"spiffe://vglobal/cluster/{cluster}"
        )
    if code is _C.ALREADY_EXISTS:
        return (
            f'another agent is connected for cluster "{cluster}"{said}: stop it, or give this one '
            "another --name; a restarted agent with the same identity takes over once the old stream "
            "misses its heartbeats"
        )
    if code is _C.RESOURCE_EXHAUSTED:
        return f"the hub is at its limit of agent streams (hub --max-agent-streams) or over its rate{said}"
    if code in (_C.FAILED_PRECONDITION, _C.INVALID_ARGUMENT):
        return f"the hub refused what this agent sent{said}: the agent and hub versions may differ"
    if looks_like_tls(details):
        if dial.tls:
            cert = (
                ""
                if dial.cert is not None
                else "; the agents' port (hub --agent-listen) takes only "
                "client certificates: give --cert/--key, or dial the hub's --listen port with a token"
            )
            return (
                f"TLS with the hub at {dial.target} failed{said}: check --ca-file (the CA that signed "
                f"the hub's certificate, whose names must include the host of --hub){cert}"
            )
        return (
            f"the hub at {dial.target} closed the connection{said}: it serves TLS and this agent dials "
            "in plaintext: add --ca-file (and --cert/--key or --token-file)"
        )
    if code is _C.UNAVAILABLE:
        return f"the hub at {dial.target} is not reachable{said}: check --hub (VGLOBAL_HUB) and that it runs"
    name = code.name if code is not None else "an error"
    return f"the hub stream ended with {name}{said}"


def is_refusal(code: grpc.StatusCode | None, details: str) -> bool:
    """Whether retrying at once cannot help: the hub's config or ours has to change first."""
    return code in REFUSALS or looks_like_tls(details)
