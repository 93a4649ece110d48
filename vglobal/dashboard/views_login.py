"""/login and /logout: a token becomes a session the hub has accepted; logout forgets it."""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

import grpc
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from vglobal.api.v1 import queues_pb2
from vglobal.dashboard.session import COOKIE, MAX_TOKEN, Caller
from vglobal.dashboard.web import gateway, page, sessions, set_session_cookie, templates
from vglobal.sdk import VGlobalError


def _next(value: str) -> str:
    """Only a relative path of this site, with its query, to go back to after login; "/" for
    anything a browser could read as another site: a host (``//evil``), a backslash (``/\\evil``
    is ``//evil`` to a browser), a control character (a browser drops a tab
    from ``/TAB/evil``) or a scheme."""
    parts = urlsplit(value)
    ok = (
        value.startswith("/")
        and not value.startswith("//")
        and "\\" not in value
        and not any(c < " " or c == "\x7f" for c in value)
        and not parts.scheme
        and not parts.netloc
        and not value.startswith("/login")  # no loop back to the form
    )
    return value if ok else "/"


def _same_origin(request: Request) -> bool:
    """A login posted from another site is refused (login CSRF): the browser names the origin."""
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host", "")


def _form(request: Request, message: str = "", status: int = 200, after: str | None = None) -> Response:
    after = _next(after if after is not None else request.query_params.get("next", "/"))
    context = {"request": request, "caller": None, "message": message, "next": after}
    return templates.TemplateResponse(request, "login.html", context, status_code=status)


async def login(request: Request) -> Response:
    if request.method == "GET":
        return _form(request)
    if not _same_origin(request):
        return _form(request, "the login came from another site", 403)
    form = await request.form()
    token = str(form.get("token", "")).strip()
    after = str(form.get("next", "/"))
    if not token:
        return _form(request, "token: give the bearer token the hub's auth config knows you by", 400, after)
    if len(token) > MAX_TOKEN:
        message = f"token: longer than {MAX_TOKEN} characters, so no token the hub knows"
        return _form(request, message, 401, after)
    if await sessions(request).hub_is_open():
        return await _open_login(request, token, after)
    gw = gateway(request)
    try:
        await gw.call(gw.queues.ListQueues, queues_pb2.ListQueuesRequest(), token)
    except VGlobalError as exc:
        if exc.code == grpc.StatusCode.UNAUTHENTICATED:
            return _form(request, "the hub does not accept this token", 401, after)
        if exc.code != grpc.StatusCode.PERMISSION_DENIED:  # a role without queue reads may still log in
            return _form(request, f"the hub could not be asked: {exc.message}", 502, after)
    caller = await sessions(request).login(token)
    response = RedirectResponse(_next(str(form.get("next", "/"))), 303)
    set_session_cookie(request, response, caller)
    return response


async def _open_login(request: Request, token: str, after: str) -> Response:
    """A hub without an auth config knows no tokens: the login token this dashboard printed at start
    stands in, so that no other page in the browser can act through it."""
    expected: str = request.app.state.login_token
    if not expected or not hmac.compare_digest(token.encode(), expected.encode()):
        message = "the hub is open: give the login token the dashboard printed at start"
        return _form(request, message, 401, after)
    caller = await sessions(request).login(None)
    response = RedirectResponse(_next(after), 303)
    set_session_cookie(request, response, caller)
    return response


@page(action=True)
async def logout(request: Request, caller: Caller) -> Response:
    sessions(request).logout(caller.session_id)
    response = RedirectResponse("/login", 303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=request.app.state.tls)
    return response
