"""What many agent streams report of their clusters, written at once: which streams still speak
for their cluster (the rows locked, in name order), and their heartbeats, one statement each
however many clusters (see hub/agents/record.py's ``record_many``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from vglobal.model.phases import ClusterState
from vglobal.store.repo.live import cursor


def speakers(streams: Sequence[tuple[str, str]], *, session: Session) -> set[tuple[str, str]]:
    """Of these (cluster, stream) pairs, those whose stream still speaks for its cluster, the
    clusters' rows locked until the caller commits (so a take-over cannot slip in between)."""
    if not streams:
        return set()
    with cursor(session) as cur:
        cur.execute(
            "SELECT c.name, c.stream FROM clusters c JOIN unnest(CAST(%(n)s AS text[]), "
            "CAST(%(s)s AS text[])) AS d(name, stream) ON c.name = d.name AND c.stream = d.stream "
            "ORDER BY c.name FOR UPDATE OF c",
            {"n": [c for c, _ in streams], "s": [s for _, s in streams]},
        )
        return {(str(n), str(s)) for n, s in cur.fetchall()}


def heartbeats(
    beats: Sequence[tuple[str, dict[str, dict[str, int]], dict[str, list[list[Any]]]]], *, session: Session
) -> None:
    """Per cluster (name, its changed nodes' free capacity, changed card tables): merged into its
    row, which is marked alive; one statement for all."""
    if not beats:
        return
    with cursor(session) as cur:
        cur.execute(
            "UPDATE clusters AS c SET free = c.free || CAST(d.free AS jsonb), "
            "devices = CASE WHEN d.cards = '{}' THEN c.devices ELSE c.devices || CAST(d.cards AS jsonb) END, "
            "last_heartbeat = now(), state = %(ready)s, not_ready_since = NULL "
            "FROM unnest(CAST(%(n)s AS text[]), CAST(%(f)s AS text[]), CAST(%(d)s AS text[])) "
            "AS d(name, free, cards) WHERE c.name = d.name",
            {
                "n": [b[0] for b in beats],
                "f": [json.dumps(b[1]) for b in beats],
                "d": [json.dumps(b[2]) for b in beats],
                "ready": ClusterState.Ready.value,
            },
        )
