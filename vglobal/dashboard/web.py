"""What every page shares: finding the caller, rendering a template or JSON, and the hub's refusals
turned into HTTP answers."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import grpc
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from vglobal.dashboard import fmt, svg
from vglobal.dashboard.gateway import Gateway
from vglobal.dashboard.inputs import BadInput
from vglobal.dashboard.session import COOKIE, CSRF_FIELD, CSRF_HEADER, MAX_TOKEN, Caller, Sessions
from vglobal.sdk import VGlobalError, rows

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.globals.update(fmt=fmt, svg=svg)
templates.env.filters.update(age=functools.partial(rows.age, unset="-"), when=fmt.when, qty=fmt.qty)

Handler = Callable[[Request, Caller], Awaitable[Response]]

HTTP_OF = {
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
}


def gateway(request: Request) -> Gateway:
    gw: Gateway = request.app.state.gateway
    return gw


def sessions(request: Request) -> Sessions:
    s: Sessions = request.app.state.sessions
    return s


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


async def find_caller(request: Request) -> Caller | None:
    token = bearer(request)
    if token is not None and len(token) > MAX_TOKEN:
        return None  # no hub issues such a token: refused before any hub call
    if token is not None:
        return await sessions(request).bearer(token)
    return sessions(request).get(request.cookies.get(COOKIE))


def set_session_cookie(request: Request, response: Response, caller: Caller) -> None:
    response.set_cookie(
        COOKIE,
        caller.session_id or "",
        httponly=True,
        secure=request.app.state.tls,
        samesite="strict",
        path="/",
    )


def login_url(request: Request) -> str:
    """/login with the whole link asked for (path and query) to go back to, e.g.
    ``/login?next=/jobs%3Fqueue%3Dtraining``, so a shared link keeps its filters."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/login?next=" + quote(target, safe="/")


def page(*, action: bool = False) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """A route that needs a caller (and, for ``action``, the session's CSRF token)."""

    def wrap(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(fn)
        async def run(request: Request) -> Response:
            caller = await find_caller(request)
            fresh = False
            if caller is None and request.app.state.no_login and await sessions(request).hub_is_open():
                caller, fresh = await sessions(request).login(None), True
            if caller is None:
                if wants_json(request) or request.method != "GET":
                    return JSONResponse({"error": "log in, or send Authorization: Bearer TOKEN"}, 401)
                return RedirectResponse(login_url(request), 303)
            if action and not caller.csrf_ok(await csrf_given(request)):
                return error(request, caller, 403, "the request has no valid CSRF token: reload the page")
            try:
                response = await fn(request, caller)
            except BadInput as exc:
                response = error(request, caller, 400, str(exc))
            except VGlobalError as exc:
                status = HTTP_OF.get(exc.code, 502)
                if status == 401 and caller.session_id is not None:
                    sessions(request).logout(caller.session_id)
                response = error(request, caller, status, exc.message)
            if fresh:
                set_session_cookie(request, response, caller)
            return response

        return run

    return wrap


async def csrf_given(request: Request) -> str | None:
    given = request.headers.get(CSRF_HEADER)
    if given:
        return given
    form = await request.form()
    value = form.get(CSRF_FIELD)
    return value if isinstance(value, str) else None


def render(
    request: Request, caller: Caller, template: str, data: dict[str, Any], status: int = 200
) -> Response:
    """JSON under /api/, else the page; ``data`` holds plain values either way."""
    if wants_json(request):
        return JSONResponse(json.loads(json.dumps(data, default=str)), status)
    context = {"request": request, "caller": caller, "open_hub": caller.token is None, **data}
    return templates.TemplateResponse(request, template, context, status_code=status)


def error(request: Request, caller: Caller | None, status: int, message: str) -> Response:
    if wants_json(request) or caller is None:
        return JSONResponse({"error": message}, status)
    context = {"request": request, "caller": caller, "status": status, "message": message}
    return templates.TemplateResponse(request, "error.html", context, status_code=status)


def fragment(request: Request, template: str, context: dict[str, Any]) -> HTMLResponse:
    html = templates.get_template(template).render({"request": request, **context})
    response = HTMLResponse(html)
    if "revision" in context:  # where a live page resumes its stream after fetching this part
        response.headers["x-revision"] = str(context["revision"])
    return response
