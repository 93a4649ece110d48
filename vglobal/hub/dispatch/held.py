"""What each queue's jobs hold on each cluster after a cycle, its descendants' included: stored
with the queue's figures, it is what a Dispatch tells an agent the queue holds elsewhere."""

from __future__ import annotations

from vglobal.admission import ROOT, AdmissionResult, Admit, Snapshot

Units = dict[str, int]


def held_by_cluster(snapshot: Snapshot, result: AdmissionResult) -> dict[str, dict[str, Units]]:
    """queue -> cluster -> units: the running jobs as the cycle charged them (less those it
    reclaimed) and the jobs it admitted, at their gang's request."""
    taken = {r.victim_uid for r in result.reclaims}
    own: dict[tuple[str, str], Units] = {}

    def add(queue: str, cluster: str, request: Units) -> None:
        units = own.setdefault((queue, cluster), {})
        for name, value in request.items():
            units[name] = units.get(name, 0) + value

    for job in snapshot.running:
        if job.uid not in taken:
            add(job.queue, job.cluster, dict(job.request))
    admitted = {uid: d.cluster for uid, d in result.decisions.items() if type(d) is Admit}
    if admitted:
        for p in snapshot.pending:
            cluster = admitted.get(p.uid)
            if cluster is not None:
                add(p.queue, cluster, dict(p.request))
    parent = {q.name: q.parent or ROOT for q in snapshot.queues}
    out: dict[str, dict[str, Units]] = {}
    for (queue, cluster), units in own.items():
        name: str | None = queue
        for _ in range(len(parent) + 1):  # a cycle in the tree cannot loop for ever
            if name is None or name == ROOT:
                break
            held = out.setdefault(name, {}).setdefault(cluster, {})
            for r, v in units.items():
                held[r] = held.get(r, 0) + v
            name = parent.get(name)
    return out
