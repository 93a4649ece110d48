"""`vglobal get pods`: the pods of the jobs that run, as their clusters name and report them."""

from __future__ import annotations

from typing import Any

from vglobal.sdk import Client, rows

# Jobs whose pods are listed when no job is named: those that hold a cluster now.
LIVE_BINDINGS = ("Dispatched", "Running")

def list_pods(
    client: Client, *, job: str = "", namespace: str = "", cluster: str = ""
) -> list[dict[str, Any]]:
    """The pods of ``job`` (in ``namespace``, default "default"), or of every job on a cluster
    (``cluster``'s only, if given)."""
    if job:
        jobs = [client.get_job(job, namespace or "default")]
    else:
        query: dict[str, Any] = {"namespace": namespace} if namespace else {}
        if cluster:
            query["cluster"] = cluster
        jobs = [
            client.get_job(j.name, j.namespace)
            for page in client.job_pages(**query)
            for j in page
            if j.cluster and j.binding_phase in LIVE_BINDINGS
        ]
    return [r for j in jobs if not cluster or j.cluster == cluster for r in rows.pods(j)]
