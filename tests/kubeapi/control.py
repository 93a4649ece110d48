"""The knobs, by name: one table serves both the in-process handle and the HTTP control listener
(``POST /_emulator/<op>`` with JSON arguments, same bearer token), and ``Knobs`` is the typed client
side of it that both handles share."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.kubeapi.status import ApiError, unauthorized
from tests.kubeapi.store import encode

if TYPE_CHECKING:
    from tests.kubeapi.server import EmulatorServer


def _kubelet(s: EmulatorServer) -> Any:
    assert s.kubelet is not None
    return s.kubelet


OPS: dict[str, Callable[..., Any]] = {
    "drop_watches": lambda s, abort=False: s.drop_watches(abort),
    "compact": lambda s: s.compact(),
    "send_bookmarks": lambda s: s.send_bookmarks(),
    "fail": lambda s, status, count=1, path=None, method=None, retry_after=1, message="": s.faults.add(
        status, count=count, path=path, method=method, retry_after=retry_after, message=message
    ),
    "clear_faults": lambda s: s.faults.clear(),
    "pause": lambda s, refuse=False: s.pause(refuse),
    "resume": lambda s: s.resume(),
    "requests": lambda s, since=0, **match: s.faults.requests(since, **match),
    "counts": lambda s: dict(s.faults.counts),
    "set_hypernode_crd": lambda s, installed: s.set_hypernode_crd(installed),
    "set_crd": lambda s, name, installed: s.set_crd(name, installed),
    "set_kubelet": lambda s, enabled: _kubelet(s).set_enabled(enabled),
    "set_node_ready": lambda s, node, ready: _kubelet(s).set_node_ready(node, ready),
    "evict_node": lambda s, node: _kubelet(s).evict_node(node),
    "kill_container": lambda s, namespace, name, code, reason="": _kubelet(s).kill_container(
        namespace, name, code=code, reason=reason
    ),
    "state": lambda s: s.state(),
}


async def call(server: EmulatorServer, op: str, args: dict[str, Any]) -> Any:
    fn = OPS.get(op)
    if fn is None:
        raise KeyError(f"no knob {op!r}; knobs: {', '.join(sorted(OPS))}")
    result = fn(server, **args)
    if inspect.isawaitable(result):
        result = await result
    return result


def app(server: EmulatorServer) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {server.token}":
            err = unauthorized()
            return web.Response(body=encode(err.body), status=401, content_type="application/json")
        try:
            raw = await request.read()
            args = json.loads(raw) if raw else {}
            result = await call(server, request.match_info["op"], args)
        except ApiError as err:
            return web.Response(body=encode(err.body), status=err.code, content_type="application/json")
        except (KeyError, TypeError, ValueError) as e:
            return web.Response(body=encode({"error": str(e)}), status=400, content_type="application/json")
        return web.Response(body=encode({"result": result}), content_type="application/json")

    application = web.Application()
    application.router.add_post("/_emulator/{op}", handle)
    return application


class Knobs:
    """The fault and kubelet knobs; subclasses say how a call reaches the emulator."""

    def _call(self, op: str, **args: Any) -> Any:
        raise NotImplementedError

    def drop_watches(self, *, abort: bool = False) -> int:
        """End every open watch (``abort``: cut the connection mid-stream instead of ending it)."""
        return int(self._call("drop_watches", abort=abort))

    def compact(self) -> int:
        """Forget the change history: resuming a watch from an older resourceVersion gets 410."""
        return int(self._call("compact"))

    def send_bookmarks(self) -> int:
        return int(self._call("send_bookmarks"))

    def fail(
        self,
        status: int,
        *,
        count: int | None = 1,
        path: str | None = None,
        method: str | None = None,
        retry_after: int = 1,
        message: str = "",
    ) -> int:
        """Answer the next ``count`` matching requests (None: all, until cleared) with 429 (Retry-After),
        500, 403 or another code; ``path`` is a regular expression searched in the URL path."""
        return int(
            self._call(
                "fail",
                status=status,
                count=count,
                path=path,
                method=method,
                retry_after=retry_after,
                message=message,
            )
        )

    def clear_faults(self) -> None:
        self._call("clear_faults")

    def pause(self, *, refuse: bool = False) -> None:
        self._call("pause", refuse=refuse)

    def resume(self) -> None:
        self._call("resume")

    def requests(self, since: int = 0, **match: Any) -> list[dict[str, Any]]:
        """Logged requests after sequence number ``since`` whose fields equal ``match`` (verb="create",
        resource="pods/binding", namespace=..., name=..., method=..., code=...)."""
        out: list[dict[str, Any]] = self._call("requests", since=since, **match)
        return out

    def counts(self) -> dict[str, int]:
        """Requests so far by ``"<verb> <resource>[/<subresource>]"``."""
        out: dict[str, int] = self._call("counts")
        return out

    def set_hypernode_crd(self, installed: bool) -> None:
        self._call("set_hypernode_crd", installed=installed)

    def set_crd(self, name: str, installed: bool) -> None:
        """Install or remove a served CRD by name (``rayclusters.ray.io``, ``leaderworkersets.leaderworkerset.x-k8s.io``)."""
        self._call("set_crd", name=name, installed=installed)

    def set_kubelet(self, enabled: bool) -> None:
        self._call("set_kubelet", enabled=enabled)

    def set_node_ready(self, node: str, ready: bool) -> dict[str, Any]:
        out: dict[str, Any] = self._call("set_node_ready", node=node, ready=ready)
        return out

    def evict_node(self, node: str) -> int:
        return int(self._call("evict_node", node=node))

    def kill_container(self, namespace: str, name: str, *, code: int, reason: str = "") -> dict[str, Any]:
        """Every container of the pod exits now with ``code`` (``reason`` e.g. OOMKilled)."""
        out: dict[str, Any] = self._call(
            "kill_container", namespace=namespace, name=name, code=code, reason=reason
        )
        return out

    def oom_kill(self, namespace: str, name: str) -> dict[str, Any]:
        return self.kill_container(namespace, name, code=137, reason="OOMKilled")

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = self._call("state")
        return out
