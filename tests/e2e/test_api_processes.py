"""A hub with --api-processes 3: three processes serve the API on one port, clients on separate
connections reach more than one of them, the same request ids sent through all of them make one
job each, every job runs once, and a hub killed with -9 takes its API processes with it."""

from __future__ import annotations

import json
import signal
import threading

import grpc
import psutil
import sqlalchemy as sa

from tests.e2e.harness import System, sim_cluster, wait_for
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc

CLIENTS = 12
JOBS = 60
MANIFEST = (
    '{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{"name":"p%d",'
    '"annotations":{"vglobal.io/sim-duration":"200ms"}},"spec":{"minAvailable":1,"tasks":[{"name":"t",'
    '"replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"x",'
    '"resources":{"requests":{"cpu":"100m"}}}]}}}]}}'
)


def api_processes(system: System) -> list[psutil.Process]:
    """The hub's API processes (not multiprocessing's resource tracker)."""
    children = psutil.Process(system.procs["hub"].pid).children()
    return [p for p in children if "spawn_main" in " ".join(p.cmdline())]


def listening(proc: psutil.Process, port: int) -> bool:
    return any(c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in proc.net_connections("tcp"))


def serving(proc: psutil.Process, port: int, clients: set[int]) -> int:
    """Connections this process holds on the API port from the given client ports."""
    return sum(
        1 for c in proc.net_connections("tcp") if c.laddr.port == port and c.raddr and c.raddr.port in clients
    )


def test_api_processes_share_the_port_and_make_one_job_per_request_id(system: System) -> None:
    system.start_hub("--api-processes", "3", "--rate-limit", "0")
    system.start_agent("east", sim_cluster("east", nodes=4, cpu="100"))
    # through the CLI's own process: the connections this process holds to the port are counted below
    wait_for(lambda: len(json.loads(system.cli("get", "clusters", "-o", "json").stdout)) == 1, 60, "agent registered", system)
    hub = psutil.Process(system.procs["hub"].pid)
    port = int(system.target.rsplit(":", 1)[1])
    wait_for(
        lambda: sum(1 for p in api_processes(system) if listening(p, port)) == 2,
        120,
        "two more API processes listening",
        system,
    )

    # Every client submits the same JOBS request ids, each on a connection of its own, and keeps
    # it open until all have submitted (so where the connections landed can be looked at).
    uids: list[dict[str, str]] = [{} for _ in range(CLIENTS)]
    all_submitted = threading.Barrier(CLIENTS + 1)
    checked = threading.Event()

    def submit(k: int) -> None:
        # Channels of one process share their connections unless each keeps its own pool.
        with grpc.insecure_channel(system.target, options=[("grpc.use_local_subchannel_pool", 1)]) as ch:
            stub = jobs_pb2_grpc.JobServiceStub(ch)
            order = list(range(JOBS)) if k % 2 == 0 else list(reversed(range(JOBS)))
            try:
                for i in order:
                    request = jobs_pb2.SubmitJobRequest(manifest=MANIFEST % i, request_id=f"rid-{i}")
                    uids[k][f"rid-{i}"] = stub.SubmitJob(request, timeout=60).job.uid
            except BaseException:
                all_submitted.abort()  # the test fails at once, not after the barrier's timeout
                raise
            all_submitted.wait(timeout=300)
            checked.wait(timeout=300)

    threads = [threading.Thread(target=submit, args=(k,), daemon=True) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    all_submitted.wait(timeout=300)
    try:
        ours = psutil.Process().net_connections("tcp")
        clients = {c.laddr.port for c in ours if c.raddr and c.raddr.port == port}
        holding = [serving(p, port, clients) for p in [hub, *api_processes(system)]]
    finally:
        checked.set()
    for t in threads:
        t.join(timeout=60)
    # 12 connections all in one of 3 processes: one chance in 177,147.
    assert sum(holding) == CLIENTS and sum(1 for n in holding if n) >= 2, holding
    assert all(u == uids[0] for u in uids) and len(set(uids[0].values())) == JOBS

    engine = sa.create_engine(system.database_url)
    try:

        def finished() -> bool:
            with engine.connect() as conn:
                n = conn.execute(sa.text("SELECT count(*) FROM jobs WHERE phase = 'Completed'"))
                return int(n.scalar_one()) == JOBS

        wait_for(finished, 300, "every job Completed", system)
        with engine.connect() as conn:
            jobs, rids, generations = conn.execute(
                sa.text(
                    "SELECT count(*), count(DISTINCT request_id), "
                    "(SELECT max(generation) FROM resource_bindings) FROM jobs"
                )
            ).one()
    finally:
        engine.dispose()
    assert (jobs, rids, generations) == (JOBS, JOBS, 1)

    children = api_processes(system)
    assert len(children) >= 2
    system.kill("hub", signal.SIGKILL)
    _, alive = psutil.wait_procs(children, timeout=60)
    assert not alive, "API processes outlived their hub"
    system.start_hub(name="hub-2")  # the port is free again
    assert len(system.get_json("jobs")) == JOBS
