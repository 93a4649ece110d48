"""Is the API server there? A small probe (``GET /version``, which every authenticated client may
read) on a thread, so a server that stopped answering is noticed within seconds even when no
watch event or write would have told."""

from __future__ import annotations

import logging
import threading

from vglobal.agent.kube import paths
from vglobal.agent.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)


class Probe:
    def __init__(
        self, api: KubeApi, *, interval: float = 2.0, timeout: float = 2.0, failures: int = 2
    ) -> None:
        self.api = api
        self.interval = interval
        self.timeout = timeout
        self.failures = failures
        self._failed = 0
        self._error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kube-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def problem(self) -> str:
        """Why the API server counts as unreachable, or "" (read from the agent's main loop)."""
        return self._error if self._failed >= self.failures else ""

    def check(self) -> None:
        try:
            self.api.request("GET", paths.VERSION, timeout=(self.timeout, self.timeout))
        except ApiError as exc:
            if exc.unreachable or exc.status >= 500:
                self._error = f"{exc.status or 'no answer'}: {exc.message}"[:300]
                self._failed += 1
                return
        self._failed = 0

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.check()
            self._stop.wait(self.interval)
