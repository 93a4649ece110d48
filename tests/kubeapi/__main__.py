"""``python -m tests.kubeapi --port 0 --kubeconfig-out FILE [--nodes N | --cluster clusters/x.yaml]``:
an emulated Kubernetes API server as its own process. Prints one JSON line (url, control, token,
kubeconfig, pid) once it listens, then serves until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys

from tests.kubeapi.cluster import from_sim_cluster, load_sim_cluster, sim_pools, simple_nodes
from tests.kubeapi.handles import new_event_loop, write_kubeconfig
from tests.kubeapi.server import EmulatorConfig, EmulatorServer


def _quantities(text: str) -> dict[str, str]:
    out = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip()
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.kubeapi", description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="loopback only: the emulator speaks plain HTTP")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--control-port", type=int, default=0)
    p.add_argument("--kubeconfig-out", required=True, help="where to write the kubeconfig")
    p.add_argument("--name", default="emulated", help="cluster, user and context name in the kubeconfig")
    p.add_argument("--token", default=None, help="bearer token to require (default: random)")
    p.add_argument("--nodes", type=int, default=0, help="N identical nodes node-0..node-N-1")
    p.add_argument("--node-allocatable", default="cpu=32,memory=128Gi,pods=110")
    p.add_argument("--cluster", default=None, help="nodes and HyperNodes from a SimCluster file")
    p.add_argument("--no-kubelet", action="store_true", help="bound pods stay Pending")
    p.add_argument("--no-hypernode-crd", action="store_true", help="the HyperNode CRD is not installed")
    p.add_argument(
        "--no-provisioning-requests",
        action="store_true",
        help="the autoscaler of --cluster's autoscaled groups serves no ProvisioningRequests (gated pods only)",
    )
    p.add_argument("--history", type=int, default=20_000, help="watch history kept per kind")
    p.add_argument("--bookmark-interval", type=float, default=60.0)
    p.add_argument("--kubelet-start-delay", type=float, default=0.0)
    p.add_argument("--kubelet-termination-delay", type=float, default=0.0)
    p.add_argument(
        "--state", default="", help="keep every object in FILE, read back on start (an apiserver with its etcd)"
    )
    return p.parse_args(argv)


def config_from(args: argparse.Namespace) -> EmulatorConfig:
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("the emulator listens on loopback only (it has no TLS)")
    nodes = simple_nodes(args.nodes, _quantities(args.node_allocatable))
    hypernodes = []
    pools = []
    if args.cluster:
        cluster = load_sim_cluster(args.cluster)
        more, hypernodes = from_sim_cluster(cluster)
        nodes += more
        pools = sim_pools(cluster)
    cfg = EmulatorConfig(
        host=args.host,
        port=args.port,
        control_port=args.control_port,
        name=args.name,
        kubelet=not args.no_kubelet,
        hypernode_crd=not args.no_hypernode_crd,
        history_limit=args.history,
        bookmark_interval=args.bookmark_interval,
        kubelet_start_delay=args.kubelet_start_delay,
        kubelet_termination_delay=args.kubelet_termination_delay,
        nodes=nodes,
        hypernodes=hypernodes,
        pools=pools,
        provisioning_requests=not args.no_provisioning_requests,
        state_file=args.state,
    )
    if args.token:
        cfg.token = args.token
    return cfg


async def serve(args: argparse.Namespace) -> None:
    server = EmulatorServer(config_from(args))
    await server.start()
    write_kubeconfig(args.kubeconfig_out, server.url, server.token, args.name)
    print(
        json.dumps(
            {
                "url": server.url,
                "control": server.control_url,
                "token": server.token,
                "kubeconfig": os.path.abspath(args.kubeconfig_out),
                "pid": os.getpid(),
            }
        ),
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()


def main(argv: list[str] | None = None) -> None:
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(serve(parse_args(argv)))


if __name__ == "__main__":
    main()
