"""Cluster identities in client certificates: the URI SAN ``spiffe://vglobal/cluster/NAME``."""

from __future__ import annotations

from collections.abc import Iterable

CLUSTER_URI_PREFIX = "spiffe://vglobal/cluster/"


def cluster_uri(name: str) -> str:
    return CLUSTER_URI_PREFIX + name


def clusters_named(uris: Iterable[str]) -> list[str]:
    """The cluster names among a certificate's URI SANs (normally exactly one)."""
    out = []
    for uri in uris:
        if uri.startswith(CLUSTER_URI_PREFIX):
            name = uri[len(CLUSTER_URI_PREFIX) :]
            if name and "/" not in name and name not in out:
                out.append(name)
    return out
