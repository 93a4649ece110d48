"""Throughput of the Kubernetes API emulator (tests/kubeapi) driven by the official client.

One client process creates pods and binds each through ``pods/binding`` from several threads that
share one ApiClient (as an agent would), against the emulator running as its own process with
5,000 nodes and the fake kubelet on; optionally one informer-style watch on all pods runs beside
them. Prints pods created+bound per second. Run from the repository root:

    .venv/bin/python bench/kubeapi.py                         # 20,000 pods on 5,000 nodes, 8 threads
    .venv/bin/python bench/kubeapi.py --pods 2000 --nodes 500  # quick run
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import psutil
from kubernetes import client, watch

from tests.kubeapi import EmulatorProcess
from tests.kubeapi.testkit import binding, pod_body


def follow(core: client.CoreV1Api, rv: str, want: int, seen: list[int], done: threading.Event) -> None:
    """Count pods that reach Running through one watch, as an agent's informer would see them."""
    running: set[str] = set()
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "bench", resource_version=rv, allow_watch_bookmarks=True):
        obj: Any = ev["raw_object"]
        if ev["type"] != "BOOKMARK" and obj.get("status", {}).get("phase") == "Running":
            running.add(obj["metadata"]["name"])
            if len(running) >= want:
                seen.append(len(running))
                done.set()
                w.stop()
                return


def run(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmulatorProcess(
            Path(tmp) / "kubeconfig", "--nodes", str(args.nodes), "--history", str(4 * args.pods)
        ) as emu,
    ):
        api = emu.api_client()
        api.configuration.connection_pool_maxsize = args.threads + 2
        api.rest_client = client.rest.RESTClientObject(api.configuration)
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "bench"}})
        rv = core.list_namespaced_pod("bench").metadata.resource_version
        done, seen = threading.Event(), []
        watcher = None
        if args.watch:
            watcher = threading.Thread(target=follow, args=(core, rv, args.pods, seen, done), daemon=True)
            watcher.start()

        def gang(g: int) -> None:
            for k in range(args.gang):
                i = g * args.gang + k
                name = f"job-{g:05d}-w-{k}"
                if args.raw_create:  # skip the client's model deserialisation of the answer
                    _ = core.create_namespaced_pod("bench", pod_body(name), _preload_content=False).data
                else:
                    core.create_namespaced_pod("bench", pod_body(name))
                resp = core.create_namespaced_pod_binding(
                    name, "bench", binding(name, f"node-{i % args.nodes}"), _preload_content=False
                )
                _ = resp.data  # read the Status, and give the connection back to the pool
                resp.release_conn()

        server, me = psutil.Process(emu.pid), psutil.Process()
        cpu0 = (sum(server.cpu_times()[:2]), sum(me.cpu_times()[:2]))
        started = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(gang, range(args.pods // args.gang)))
        elapsed = time.perf_counter() - started
        server_ms = (sum(server.cpu_times()[:2]) - cpu0[0]) / args.pods * 1e3
        client_ms = (sum(me.cpu_times()[:2]) - cpu0[1]) / args.pods * 1e3
        counts = emu.counts()
        print(
            f"{args.pods} pods created and bound on {args.nodes} nodes by {args.threads} threads: "
            f"{elapsed:.2f} s, {args.pods / elapsed:,.0f} pods/s ({2 * args.pods / elapsed:,.0f} requests/s)"
        )
        print(
            f"CPU per pod (create + bind + kubelet start): emulator {server_ms:.2f} ms "
            f"(= {1e3 / server_ms:,.0f} pods/s per core), client {client_ms:.2f} ms "
            f"(= {1e3 / client_ms:,.0f} pods/s per core)"
        )
        print(
            f"server counted: create pods {counts.get('create pods', 0)}, "
            f"create pods/binding {counts.get('create pods/binding', 0)}"
        )
        if watcher is not None:
            done.wait(120)
            total = time.perf_counter() - started
            print(f"the watch saw all {seen[0] if seen else 0} pods Running after {total:.2f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pods", type=int, default=20_000)
    p.add_argument("--gang", type=int, default=20)
    p.add_argument("--nodes", type=int, default=5_000)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--watch", action="store_true", help="one watch on all pods beside the writers")
    p.add_argument("--raw-create", action="store_true", help="creates with _preload_content=False")
    run(p.parse_args())


if __name__ == "__main__":
    main()
