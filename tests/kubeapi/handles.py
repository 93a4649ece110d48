"""Two ways to run the emulator from a test or a bench: in this process (a thread with its own event
loop) or as a separate process (``python -m tests.kubeapi``) that a test can kill or stop. Both offer
the same knobs and write a kubeconfig the official client loads unpatched."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tests.kubeapi import control
from tests.kubeapi.control import Knobs
from tests.kubeapi.server import EmulatorConfig, EmulatorServer

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where installed (about twice the requests per CPU second), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def write_kubeconfig(path: str | Path, url: str, token: str, name: str, namespace: str = "default") -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
    }
    out = Path(path)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    out.chmod(0o600)
    return out


def api_client(kubeconfig: str | Path, context: str | None = None) -> Any:
    """An ApiClient of the official client built from the kubeconfig, as a user's code would."""
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig), context=context)


class KubeApiEmulator(Knobs):
    """The emulator on a thread of this process; ``with KubeApiEmulator(config, kubeconfig) as emu:``."""

    def __init__(self, config: EmulatorConfig | None = None, kubeconfig: str | Path | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.server = EmulatorServer(self.config)
        self._kubeconfig_path = kubeconfig
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kubeapi-emulator", daemon=True)
        self.kubeconfig: Path | None = None

    def start(self) -> KubeApiEmulator:
        self._thread.start()
        self._await(self.server.start())
        if self._kubeconfig_path is not None:
            self.kubeconfig = write_kubeconfig(self._kubeconfig_path, self.url, self.token, self.config.name)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._await(self.server.stop())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> KubeApiEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        return self.server.token

    def _await(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def run(self, fn: Callable[[EmulatorServer], T]) -> T:
        """Run ``fn(server)`` on the emulator's loop (to read or change its state directly)."""

        async def go() -> T:
            return fn(self.server)

        return self._await(go())

    def _call(self, op: str, **args: Any) -> Any:
        return self._await(control.call(self.server, op, args))

    def api_client(self) -> Any:
        assert self.kubeconfig is not None, "start the emulator with a kubeconfig path"
        return api_client(self.kubeconfig)


class EmulatorProcess(Knobs):
    """``python -m tests.kubeapi`` as a child process; knobs travel over its control listener."""

    def __init__(self, kubeconfig: str | Path, *args: str, startup_timeout: float = 60) -> None:
        self.kubeconfig = Path(kubeconfig)
        self.args = args
        self.startup_timeout = startup_timeout
        self._spawn(["--port", "0", *args])

    def _spawn(self, args: list[str]) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.kubeapi", "--kubeconfig-out", str(self.kubeconfig), *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=self.startup_timeout)
            raise RuntimeError(f"the emulator exited with {self.proc.returncode} before it listened")
        info = json.loads(line)
        self.url: str = info["url"]
        self.control_url: str = info["control"]
        self.token: str = info["token"]
        self.pid = self.proc.pid

    def restart(self) -> None:
        """A new process on the same port with the same token (after ``kill``): with ``--state`` it
        carries on from its journal, as an API server restarted on its etcd."""
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        port = self.url.rsplit(":", 1)[1]
        self._spawn([*self.args, "--port", port, f"--token={self.token}"])  # a token may begin with "-"

    def _call(self, op: str, **args: Any) -> Any:
        req = urllib.request.Request(
            f"{self.control_url}/_emulator/{op}",
            data=json.dumps(args).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())["result"]

    def api_client(self) -> Any:
        return api_client(self.kubeconfig)

    def suspend(self) -> None:
        """SIGSTOP: everything stops, the kubelet too (``pause`` stops only the API)."""
        self.proc.send_signal(signal.SIGSTOP)

    def cont(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> EmulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
