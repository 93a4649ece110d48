"""/clusters and /clusters/{name}: state, capacity and free per resource, nodes, GPUs, HyperNodes;
cordon, uncordon and drain for operators."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from vglobal.api.v1 import clusters_pb2
from vglobal.dashboard.fmt import amount, resources
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, gateway, page, render, wants_json
from vglobal.sdk import rows

VERBS = {"cordon": "CordonCluster", "uncordon": "UncordonCluster", "drain": "DrainCluster"}
GPU_LABELS = ("nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/mig.strategy")
WHOLE_GPUS = ("nvidia.com/gpu", "amd.com/gpu")
# Resources that share GPU cards (vGPU slots, memory and cores; MIG instances): one summary line
# per node, the rows behind it on demand.
SHARED_PREFIXES = ("volcano.sh/vgpu", "nvidia.com/mig-")
SHARED_SUMMARY = "volcano.sh/vgpu-number"


def split_shared(names: list[str]) -> tuple[list[str], list[str]]:
    """(resources shown as columns, resources that share GPU cards), each in the order given."""
    shared = [r for r in names if r.startswith(SHARED_PREFIXES)]
    return [r for r in names if r not in shared], shared


def usage(node: dict[str, Any], resource: str) -> dict[str, Any]:
    """One resource of a node: used (allocatable minus free), allocatable and free, as numbers."""
    total = amount(node["allocatable"].get(resource, "0"))
    free = amount(node["free"].get(resource, "0"))
    return {"name": resource, "used": total - free, "total": total, "free": free}


async def clusters_data(request: Request, caller: Caller) -> dict[str, Any]:
    gw = gateway(request)
    listed = await gw.call(gw.clusters.ListClusters, clusters_pb2.ListClustersRequest(), caller.token)
    clusters = [rows.cluster(c) for c in listed.clusters]
    for c in clusters:
        c["resources"] = resources(c["capacity"])
        c["main"], c["shared"] = split_shared(c["resources"])
    return {"clusters": clusters}


def hypernode_tree(hypernodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """HyperNodes depth-first from the roots, each with its ``depth``."""
    by_name = {h["name"]: h for h in hypernodes}
    out: list[dict[str, Any]] = []

    def walk(h: dict[str, Any], depth: int, seen: frozenset[str]) -> None:
        out.append({**h, "depth": depth})
        for child in sorted(h["children"]):
            if child in by_name and child not in seen:
                walk(by_name[child], depth + 1, seen | {child})

    for root in sorted((h for h in hypernodes if h["parent"] not in by_name), key=lambda h: h["name"]):
        walk(root, 0, frozenset({root["name"]}))
    return out


def running_below(nodes: list[str], work: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What runs on ``nodes``: each job once with its pod count there, and the pods in all."""
    jobs: dict[tuple[str, str], dict[str, Any]] = {}
    for node in nodes:
        for j in work.get(node, []):
            seen = jobs.setdefault((j["namespace"], j["name"]), {**j, "pods": 0})
            seen["pods"] += len(j["pods"])
    listed = sorted(jobs.values(), key=lambda j: (-j["pods"], j["namespace"], j["name"]))
    return {"jobs": listed, "pods": sum(j["pods"] for j in listed)}


@page()
async def clusters_page(request: Request, caller: Caller) -> Response:
    return render(request, caller, "clusters.html", await clusters_data(request, caller))


@page()
async def cluster_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    ref = clusters_pb2.ClusterRef(name=request.path_params["name"])
    cluster = rows.cluster(await gw.call(gw.clusters.GetCluster, ref, caller.token))
    cluster["resources"] = resources(cluster["capacity"])
    # ?queue=NAME: only that queue's jobs in what runs where.
    queue = request.query_params.get("queue", "")
    work = {
        node: [j for j in jobs if not queue or j["queue"] == queue] for node, jobs in cluster["work"].items()
    }
    cluster["main"], cluster["shared"] = split_shared(cluster["resources"])
    # Whole GPUs are in each node's GPUs cell, with the model and the vGPU line.
    cluster["node_columns"] = [r for r in cluster["main"] if r not in WHOLE_GPUS]
    for n in cluster["node_list"]:
        n["gpus"] = [usage(n, r) for r in n["allocatable"] if r in WHOLE_GPUS]
        n["shared"] = [usage(n, r) for r in split_shared(list(n["allocatable"]))[1]]
        n["gpu_labels"] = {k: v for k, v in n["labels"].items() if k in GPU_LABELS}
        n["running"] = running_below([n["name"]], work)
    tree = hypernode_tree(cluster["hypernodes"])
    for h in tree:
        h["running"] = running_below(sorted(h["nodes"]), work)
    # ?vgpu=all: every node's vGPU rows shown; else one summary line each, opened on demand.
    vgpu_open = request.query_params.get("vgpu") == "all"
    data = {"cluster": cluster, "hypernodes": tree, "queue": queue, "vgpu_open": vgpu_open}
    return render(request, caller, "cluster.html", data)


@page(action=True)
async def cluster_action(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    verb = request.url.path.rsplit("/", 1)[1]
    if verb not in VERBS:
        return error(request, caller, 404, f"no action {verb!r} on clusters")
    ref = clusters_pb2.ClusterRef(name=request.path_params["name"])
    cluster = await gw.call(getattr(gw.clusters, VERBS[verb]), ref, caller.token)
    if wants_json(request):
        return render(request, caller, "", {"cluster": rows.cluster(cluster)})
    return RedirectResponse(f"/clusters/{cluster.name}", 303)
