"""The agent's connection to one API server, through the official ``kubernetes`` client.

Requests use the client's ``ApiClient`` (its configuration, authentication and urllib3 pool) with
raw JSON in and out: no model (de)serialisation, which costs more than the HTTP exchange at the
agent's pod rates (bench/RESULTS.md, "kube backend"). Single requests go on each thread's own
keep-alive connection (direct.py); watches, and everything behind an HTTP proxy, through urllib3.
Every request takes a token from the client-side rate limiter. Failures become one exception
type, ``ApiError``: ``status`` is the HTTP code, or 0 when the server could not be reached
(refused, timed out, cut); a 403 also names the RBAC rule the agent was missing.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
import urllib3

from vglobal.agent.kube.direct import Broken, DirectConnections
from vglobal.agent.kube.ratelimit import TokenBucket

log = logging.getLogger(__name__)

SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
DEFAULT_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds
AUTH_REFRESH = 30.0  # seconds an authorization header is reused
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_RESOURCE_PATH = re.compile(
    r"^/(?:api/(?P<cv>v1)|apis/(?P<group>[^/]+)/(?P<gv>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        path: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{method} {path}: {status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        self.retry_after = retry_after

    @property
    def unreachable(self) -> bool:
        return self.status == 0

    @property
    def retriable(self) -> bool:
        """Worth trying again as it is: the server was away, busy or failing."""
        return self.status in {0, 429} or self.status >= 500

    def rbac_rule(self) -> str:
        """The rule a 403 says is missing, in the terms of a ClusterRole."""
        return rbac_rule(self.method, self.path)


def rbac_rule(method: str, path: str) -> str:
    bare, _, query = path.partition("?")
    m = _RESOURCE_PATH.match(bare)
    verb = _VERBS.get(method.upper(), method.lower())
    if m is None:
        return f"nonResourceURLs [{bare}], verbs [{verb}]"
    if method.upper() == "GET" and ("watch=1" in query or "watch=true" in query):
        verb = "watch"
    elif method.upper() == "GET" and m.group("name") is None:
        verb = "list"
    resource = m.group("res") + (f"/{m.group('sub')}" if m.group("sub") else "")
    where = f" in namespace {m.group('ns')}" if m.group("ns") else ""
    return f'apiGroups ["{m.group("group") or ""}"], resources [{resource}], verbs [{verb}]{where}'


def _status_error(status: int, body: bytes, method: str, path: str, headers: Mapping[str, str]) -> ApiError:
    reason, message = "", body.decode(errors="replace")[:500]
    try:
        doc = orjson.loads(body)
        if isinstance(doc, dict):
            reason = str(doc.get("reason") or "")
            message = str(doc.get("message") or message)
    except orjson.JSONDecodeError:
        pass
    retry_after = None
    raw = headers.get("Retry-After") or headers.get("retry-after")
    if raw:
        try:
            retry_after = float(raw)
        except ValueError:
            retry_after = None
    return ApiError(
        status, reason or f"HTTP{status}", message, method=method, path=path, retry_after=retry_after
    )


@dataclass(frozen=True)
class Connection:
    """Where the agent talks to: the client, the kubeconfig context's name and namespace."""

    client: Any  # kubernetes.client.ApiClient
    context: str | None
    namespace: str


def connect(
    *, kubeconfig: str | None = None, context: str | None = None, in_cluster: bool = False, pool: int = 16
) -> Connection:
    """Load the credentials the way kubectl / client-go do; ``pool`` sizes the urllib3 pool."""
    from kubernetes import client, config

    cfg = client.Configuration()
    if in_cluster:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        namespace = SA_NAMESPACE_FILE.read_text().strip() if SA_NAMESPACE_FILE.exists() else "default"
        chosen: str | None = None
    else:
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        entry = next((c for c in contexts if c["name"] == context), None) if context else active
        if entry is None:
            names = ", ".join(sorted(c["name"] for c in contexts))
            raise ValueError(f"--context: no context {context!r} in the kubeconfig (have: {names})")
        chosen = str(entry["name"])
        namespace = str((entry.get("context") or {}).get("namespace") or "default")
        config.load_kube_config(config_file=kubeconfig, context=chosen, client_configuration=cfg)  # type: ignore[no-untyped-call]
    cfg.connection_pool_maxsize = pool
    # one layer of retries, the agent's own (with back-off and Retry-After), not urllib3's too: its
    # silent retries would make a dead server look slow instead of dead
    cfg.retries = False
    return Connection(client.ApiClient(cfg), chosen, namespace)


class KubeApi:
    """Raw JSON requests with the client's auth, pool and timeouts, behind a token bucket."""

    def __init__(self, client: Any, *, qps: float = 50.0, burst: int = 100) -> None:
        self.client = client
        self.host = str(client.configuration.host).rstrip("/")
        self.bucket = TokenBucket(qps, burst)
        manager = client.rest_client.pool_manager
        # the host's keep-alive pool itself, looked up once: the manager's per-request URL parsing
        # and pool lookup cost about a tenth of a create. Through a proxy the manager must send
        # absolute URLs, so it stays in the path there.
        self._pool: Any = None
        self._direct: DirectConnections | None = None
        if not isinstance(manager, urllib3.ProxyManager):
            self._pool = manager.connection_from_url(self.host)
            # single requests (not watches) on each writer thread's own connection
            self._direct = DirectConnections(self._pool, urlsplit(self.host).netloc)
        self._prefix = urlsplit(self.host).path  # a server behind a path (e.g. a cluster proxy)
        self._manager = manager
        self._timeouts: dict[tuple[float, float], urllib3.Timeout] = {}
        self._auth: tuple[float, dict[str, str]] | None = None
        self._auth_lock = threading.Lock()

    def _headers(self, method: str = "GET", body: Any = None) -> dict[str, str]:
        """Headers with the current token. The client's own refresh (in-cluster token file, exec
        plugins) runs every AUTH_REFRESH seconds rather than per request: in this client release
        it re-reads the proxy environment each time, which would cost more than the request."""
        now = time.monotonic()
        with self._auth_lock:
            if self._auth is None or now - self._auth[0] > AUTH_REFRESH:
                headers = {"Accept": JSON, "Content-Type": JSON}
                self.client.update_params_for_auth(headers, None, ["BearerToken"], "", "", None)
                self._auth = (now, headers)
            out = dict(self._auth[1])
        if method == "PATCH":  # a list is a JSON patch (RFC 6902), an object a JSON merge patch
            out["Content-Type"] = JSON_PATCH if isinstance(body, list) else MERGE_PATCH
        return out

    def _send(self, method: str, path: str, body: Any, timeout: tuple[float, float]) -> Any:
        """The urllib3 response (unread). The body is serialised here and handed to the client's
        pool manager as bytes: its generic request path (content-type matching, serialising again)
        costs about a sixth of a pod's create at the agent's rates."""
        self.bucket.acquire()
        data = None if body is None else orjson.dumps(body)
        limits = self._timeouts.get(timeout)
        if limits is None:
            limits = self._timeouts[timeout] = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        try:
            if self._pool is not None:
                return self._pool.urlopen(
                    method,
                    self._prefix + path,
                    body=data,
                    headers=self._headers(method, body),
                    timeout=limits,
                    preload_content=False,
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                )
            return self._manager.request(
                method,
                self.host + path,
                body=data,
                headers=self._headers(method, body),
                timeout=limits,
                preload_content=False,
                retries=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(
                0, "Unreachable", str(exc) or type(exc).__name__, method=method, path=path
            ) from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] | Mapping[str, str] = (),
        body: Any = None,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """One call; the decoded JSON answer (a Status for deletes and bindings)."""
        full = f"{path}?{urlencode(query)}" if query else path
        if self._direct is not None:
            return self._exchange(self._direct, method, full, body, timeout)
        raw = self._send(method, full, body, timeout)
        try:
            data: bytes = raw.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(
                0, "Unreachable", str(exc) or type(exc).__name__, method=method, path=full
            ) from exc
        finally:
            raw.release_conn()
        if not 200 <= raw.status <= 299:
            raise _status_error(raw.status, data, method, full, raw.headers)
        out: dict[str, Any] = orjson.loads(data) if data else {}
        return out

    def _exchange(
        self, direct: DirectConnections, method: str, full: str, body: Any, timeout: tuple[float, float]
    ) -> dict[str, Any]:
        self.bucket.acquire()
        data = None if body is None else orjson.dumps(body)
        try:
            answer = direct.exchange(method, self._prefix + full, data, self._headers(method, body), timeout)
        except Broken as exc:
            raise ApiError(0, "Unreachable", str(exc), method=method, path=full) from exc
        if not 200 <= answer.status <= 299:
            raise _status_error(answer.status, answer.body, method, full, answer.headers)
        out: dict[str, Any] = orjson.loads(answer.body) if answer.body else {}
        return out

    def stream(
        self, path: str, query: Sequence[tuple[str, str]] | Mapping[str, str], timeout: tuple[float, float]
    ) -> Iterator[dict[str, Any]]:
        """A watch: each JSON line as a dict until the server ends the stream."""
        full = f"{path}?{urlencode(query)}"
        raw = self._send("GET", full, None, timeout)
        try:
            if not 200 <= raw.status <= 299:
                raise _status_error(raw.status, raw.data, "GET", full, raw.headers)
            pending = b""
            for chunk in raw.stream(64 * 1024, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(0, "Unreachable", str(exc) or type(exc).__name__, method="GET", path=full) from exc
        finally:
            raw.close()  # an unfinished stream cannot go back to the pool as it is
            raw.release_conn()

    def text_stream(
        self,
        path: str,
        query: Sequence[tuple[str, str]] | Mapping[str, str],
        timeout: tuple[float, float],
        stop: threading.Event,
    ) -> Iterator[list[str]]:
        """A text answer (pods/log) in batches of whole lines as the server sends them, until it
        ends or ``stop`` is set (the connection is then closed under the blocked read)."""
        full = f"{path}?{urlencode(query)}"
        raw = self._send("GET", full, None, timeout)
        done = threading.Event()

        def closer() -> None:
            while not done.wait(0.2):
                if stop.is_set():
                    raw.close()
                    return

        threading.Thread(target=closer, name="log-closer", daemon=True).start()
        try:
            if not 200 <= raw.status <= 299:
                raise _status_error(raw.status, raw.data, "GET", full, raw.headers)
            pending = b""
            for chunk in raw.stream(64 * 1024, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if lines:
                    yield [line.decode(errors="replace") for line in lines]
            if pending:
                yield [pending.decode(errors="replace")]
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            if stop.is_set():
                return
            raise ApiError(0, "Unreachable", str(exc) or type(exc).__name__, method="GET", path=full) from exc
        finally:
            done.set()
            raw.close()
            raw.release_conn()

    def close(self) -> None:
        if self._direct is not None:
            self._direct.close()  # the calling thread's; the writers' go with their threads
        self.client.close()
