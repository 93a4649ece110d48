"""The Kubernetes REST API over aiohttp: routing of /api and /apis paths, auth, injected faults, the
request log, and each verb's handler."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.kubeapi import kinds, pod_logs, pod_subresources
from tests.kubeapi.crud import DeleteOptions
from tests.kubeapi.faults import RequestInfo
from tests.kubeapi.kinds import Kind
from tests.kubeapi.selectors import selector_from_query
from tests.kubeapi.status import ApiError, bad_request, expired, method_not_allowed, unauthorized
from tests.kubeapi.store import encode
from tests.kubeapi.watching import serve_watch

if TYPE_CHECKING:
    from tests.kubeapi.server import EmulatorServer

JSON = "application/json"
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
INFO = web.RequestKey("info", RequestInfo)


class _PageNotFound(Exception):
    """An unknown path: the apiserver answers with a plain-text 404, not a Status."""


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=encode(obj), status=status, content_type=JSON)


def _raw(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type=JSON)


def _error(err: ApiError) -> web.Response:
    resp = _json(err.body, err.code)
    resp.headers.update(err.headers)
    return resp


class Route:
    __slots__ = ("group", "kind", "name", "namespace", "subresource", "version")

    def __init__(
        self, group: str, version: str, kind: Kind | None, namespace: str, name: str, sub: str
    ) -> None:
        self.group, self.version, self.kind = group, version, kind
        self.namespace, self.name, self.subresource = namespace, name, sub


def parse_path(path: str, served: dict[tuple[str, str, str], Kind]) -> Route | None:
    """None for a discovery path; raises _PageNotFound for a path the server does not know."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        raise _PageNotFound
    if parts[0] == "api":
        if len(parts) == 1:
            return None
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) <= 3:
            return None
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise _PageNotFound
    kind = served.get((group, version, rest[0]))
    if kind is None or (namespace and not kind.namespaced):
        raise _PageNotFound
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in kind.subresources:
        raise _PageNotFound
    return Route(group, version, kind, namespace, name, sub)


def _verb(method: str, route: Route | None, watch: bool) -> str:
    if route is None:
        return "get"
    if method == "GET":
        return "watch" if watch else ("get" if route.name else "list")
    return {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if route.name else "deletecollection",
    }.get(method, method.lower())


async def _body(request: web.BaseRequest) -> Any:
    data = await request.read()
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError as e:
        raise bad_request(f"error decoding request body: {e}") from None


def _continue_token(rv: int, key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(key)}).encode()).decode()


class ApiHandler:
    def __init__(self, server: EmulatorServer) -> None:
        self.server = server

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        srv = self.server
        faults = srv.faults
        watch = request.query.get("watch") in ("true", "1")
        info = RequestInfo(request.method, request.path, request.query_string)
        if faults.paused:
            await self._outage(request)
        if request.headers.get("Authorization") != f"Bearer {srv.token}":
            faults.record(info, 401)
            return _error(unauthorized())
        try:
            route = parse_path(request.path, self.server.served_routes())
        except _PageNotFound:
            faults.record(info, 404)
            return web.Response(status=404, text="404 page not found\n")
        if route is not None and route.kind is not None:
            k = route.kind
            info = RequestInfo(
                request.method,
                request.path,
                request.query_string,
                _verb(request.method, route, watch),
                k.group,
                k.plural,
                route.subresource,
                route.namespace,
                route.name,
            )
        else:
            info = RequestInfo(request.method, request.path, request.query_string, "get")
        fault = faults.check(info)
        if fault is not None:
            faults.record(info, fault.code)
            return _error(fault)
        request[INFO] = info
        try:
            if route is None:
                resp = self._discovery(request)
            else:
                resp = await self._dispatch(request, route, info.verb)
        except ApiError as err:
            resp = _error(err)
        if info.verb != "watch" or not resp.prepared:
            faults.record(info, resp.status)
        return resp

    async def _outage(self, request: web.BaseRequest) -> None:
        """A paused server does not answer; what arrived meanwhile is dropped when it comes back."""
        if not self.server.faults.refusing:
            await self.server.faults.wait_resumed()
        if request.transport is not None:
            request.transport.abort()
        raise web.HTTPServiceUnavailable  # never reaches the client: the connection is gone

    def _discovery(self, request: web.BaseRequest) -> web.Response:
        parts = [p for p in request.path.split("/") if p]
        served = list(self.server.served_kinds())
        if parts == ["api"]:
            return _json(kinds.versions(request.host))
        if parts == ["api", "v1"]:
            return _json(kinds.resource_list("v1", served))
        if parts == ["apis"]:
            return _json(kinds.group_list(served))
        if len(parts) == 2:
            doc = kinds.api_group(parts[1], served)
        else:
            gv = f"{parts[1]}/{parts[2]}"
            doc = kinds.resource_list(gv, served) if any(k.group_version == gv for k in served) else None
        if doc is None:
            return web.Response(status=404, text="404 page not found\n")
        return _json(doc)

    async def _dispatch(self, request: web.BaseRequest, route: Route, verb: str) -> web.StreamResponse:
        handler = getattr(self, f"_{verb}", None)
        if handler is None:
            raise method_not_allowed(request.method)
        result: web.StreamResponse = await handler(request, route)
        return result

    def _stored(self, kind: Kind, obj: Any, status: int = 200) -> web.Response:
        """The answer for a written object: the stored version's JSON, encoded once for watchers and us."""
        meta = obj["metadata"]
        entry = self.server.store.table(kind).objects.get((meta.get("namespace", ""), meta["name"]))
        if entry is not None and entry.obj is obj:
            return _raw(entry.raw(), status)
        return _json(obj, status)

    async def _list(self, request: web.BaseRequest, route: Route) -> web.Response:
        assert route.kind is not None
        kind, store = route.kind, self.server.store
        selector = selector_from_query(request.query, kind.fields)
        items = store.items(kind, route.namespace, selector)
        rv = store.rv
        token = request.query.get("continue")
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token))
                rv, start = int(state["rv"]), tuple(state["start"])
            except (ValueError, KeyError, TypeError):
                raise bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion"
                ) from None
            if rv < store.table(kind).floor:
                raise expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter."
                )
            items = [
                e
                for e in items
                if (e.obj["metadata"].get("namespace", ""), e.obj["metadata"]["name"]) > start
            ]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        limit = int(request.query.get("limit") or 0)
        if limit > 0 and len(items) > limit:
            last = items[limit - 1].obj["metadata"]
            meta["continue"] = _continue_token(rv, (last.get("namespace", ""), last["name"]))
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        head = encode({"kind": kind.kind + "List", "apiVersion": kind.api_version, "metadata": meta})
        return _raw(head[:-1] + b',"items":[' + b",".join(e.raw() for e in items) + b"]}")

    async def _watch(self, request: web.BaseRequest, route: Route) -> web.StreamResponse:
        assert route.kind is not None
        srv = self.server
        selector = selector_from_query(request.query, route.kind.fields)
        if route.name:
            selector = selector_from_query(
                {
                    **request.query,
                    "fieldSelector": ",".join(
                        f
                        for f in (request.query.get("fieldSelector", ""), f"metadata.name={route.name}")
                        if f
                    ),
                },
                route.kind.fields,
            )
        return await serve_watch(
            request,
            srv.store,
            srv.faults,
            srv.watch_settings,
            route.kind,
            route.namespace,
            selector,
            on_open=lambda: srv.faults.record(request[INFO], 200),
        )

    async def _get(self, request: web.BaseRequest, route: Route) -> web.StreamResponse:
        assert route.kind is not None
        if route.subresource == "log":
            return await pod_logs.serve(request, self.server.api, route.namespace, route.name)
        if route.subresource not in ("", "status"):
            raise method_not_allowed(request.method)
        entry = self.server.store.table(route.kind).objects.get(
            (route.namespace if route.kind.namespaced else "", route.name)
        )
        if entry is None:
            self.server.api.get(route.kind, route.namespace, route.name)  # raises the 404
            raise AssertionError
        return _raw(entry.raw())

    async def _create(self, request: web.BaseRequest, route: Route) -> web.Response:
        assert route.kind is not None
        api, body = self.server.api, await _body(request)
        if route.subresource == "binding":
            return _json(pod_subresources.bind(api, route.namespace, route.name, body), 201)
        if route.subresource == "eviction":
            return _json(pod_subresources.evict(api, route.namespace, route.name, body), 201)
        if route.name:
            raise method_not_allowed(request.method)
        if route.kind.namespaced and not route.namespace:
            raise method_not_allowed(request.method)
        return self._stored(route.kind, api.create(route.kind, route.namespace, body), 201)

    async def _update(self, request: web.BaseRequest, route: Route) -> web.Response:
        assert route.kind is not None
        if not route.name or route.subresource not in ("", "status"):
            raise method_not_allowed(request.method)
        body = await _body(request)
        return self._stored(
            route.kind,
            self.server.api.update(route.kind, route.namespace, route.name, body, route.subresource),
        )

    async def _patch(self, request: web.BaseRequest, route: Route) -> web.Response:
        assert route.kind is not None
        if not route.name or route.subresource not in ("", "status"):
            raise method_not_allowed(request.method)
        body = await _body(request)
        return self._stored(
            route.kind,
            self.server.api.patch(
                route.kind,
                route.namespace,
                route.name,
                request.headers.get("Content-Type", ""),
                body,
                route.subresource,
            ),
        )

    async def _delete(self, request: web.BaseRequest, route: Route) -> web.Response:
        assert route.kind is not None
        if route.subresource:
            raise method_not_allowed(request.method)
        opts = DeleteOptions.parse(request.query, await _body(request))
        api = self.server.api
        obj, gone = api.delete(route.kind, route.namespace, route.name, opts)
        return _json(api.delete_response(route.kind, obj, gone))

    async def _deletecollection(self, request: web.BaseRequest, route: Route) -> web.Response:
        assert route.kind is not None
        kind, api = route.kind, self.server.api
        opts = DeleteOptions.parse(request.query, await _body(request))
        selector = selector_from_query(request.query, kind.fields)
        deleted = []
        for entry in api.store.items(kind, route.namespace, selector):
            meta = entry.obj["metadata"]
            try:
                deleted.append(api.delete(kind, meta.get("namespace", ""), meta["name"], opts)[0])
            except ApiError:
                continue
        return _json(
            {
                "kind": kind.kind + "List",
                "apiVersion": kind.api_version,
                "metadata": {"resourceVersion": str(api.store.rv)},
                "items": deleted,
            }
        )


Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
