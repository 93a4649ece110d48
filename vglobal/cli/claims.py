"""`vglobal apply` and DRA: the ResourceClaimTemplates and ResourceClaims of the files travel with
the jobs that reference them (in the job's ``vglobal.io/resource-claims`` annotation), so the hub
fits and charges their devices and the agent creates them where the job runs."""

from __future__ import annotations

from dataclasses import replace

from vglobal.cli.documents import Document
from vglobal.model import dra


def attach_claims(docs: list[Document]) -> tuple[list[Document], list[str]]:
    """The documents without the claims, each job carrying those it references; a line for each
    claim saying which jobs it travels with."""
    if not any(dra.is_claim_document(d.body) for d in docs):
        return docs, []
    bodies, users = dra.carry([d.body for d in docs])
    kept = [d for d in docs if not dra.is_claim_document(d.body)]
    out = [d if body is d.body else replace(d, body=body) for d, body in zip(kept, bodies, strict=True)]
    lines = []
    for (ns, kind, name), jobs in users.items():
        what = f"{kind.lower()}.{dra.API_GROUP}/{ns}/{name}"
        lines.append(f"{what} travels with {', '.join(jobs)}" if jobs else f"{what} unused: no job names it")
    return out, lines
