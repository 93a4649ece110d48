"""The dashboard's ASGI app: its routes, the static files, and the hub channel it holds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from vglobal.dashboard import (
    live,
    views_clusters,
    views_hyperjobs,
    views_job,
    views_jobs,
    views_login,
    views_logs,
    views_overview,
    views_pods,
    views_queues,
    views_workflows,
)
from vglobal.dashboard.gateway import Gateway
from vglobal.dashboard.guards import Guards
from vglobal.dashboard.session import Sessions
from vglobal.dashboard.web import HERE
from vglobal.dial import Dial

# Same-origin only: no framing, no inline script, nothing from elsewhere.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)


class SecurityHeaders:
    """Headers on every answer: the CSP, no sniffing, no referrer beyond this site, no caching of
    pages that show a caller's data."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")

        async def with_headers(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))  # type: ignore[call-overload]
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                ]
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)  # type: ignore[arg-type]


def routes() -> list[Route | Mount]:
    both = [
        ("/", views_overview.overview_page),
        ("/jobs", views_jobs.jobs_page),
        ("/jobs/{namespace}/{name}", views_job.job_page),
        ("/hyperjobs", views_hyperjobs.hyperjobs_page),
        ("/hyperjobs/{namespace}/{name}", views_hyperjobs.hyperjob_page),
        ("/queues", views_queues.queues_page),
        ("/pods", views_pods.pods_page),
        ("/clusters", views_clusters.clusters_page),
        ("/clusters/{name}", views_clusters.cluster_page),
    ]
    out: list[Route | Mount] = []
    for path, fn in both:
        out.append(Route(path, fn))
        out.append(Route("/api" + (path if path != "/" else "/overview"), fn))
    out += [
        Route("/login", views_login.login, methods=["GET", "POST"]),
        Route("/logout", views_login.logout, methods=["POST"]),
        Route("/overview-jobs", views_overview.overview_jobs),
        Route("/overview-queues", views_overview.overview_queues),
        Route("/jobs-results", views_jobs.jobs_results),
        Route("/jobs-counts", views_jobs.jobs_counts),
        Route("/jobs-live", live.jobs_live),
        Route("/jobs/cancel", views_jobs.bulk_cancel, methods=["POST"]),
        Route("/api/jobs/cancel", views_jobs.bulk_cancel, methods=["POST"]),
        Route("/jobs/{namespace}/{name}/summary", views_job.job_summary),
        Route("/jobs/{namespace}/{name}/live", live.job_live),
        Route("/jobs/{namespace}/{name}/logs", views_logs.job_logs),
        Route("/queues", views_queues.queue_apply, methods=["POST"]),
        Route("/api/queues", views_queues.queue_apply, methods=["POST"]),
        Route("/cronjobs", views_workflows.cronjobs_page),
        Route("/api/cronjobs", views_workflows.cronjobs_page),
        Route("/jobflows", views_workflows.jobflows_page),
        Route("/api/jobflows", views_workflows.jobflows_page),
        *actions("/jobs/{namespace}/{name}", views_job.VERBS, views_job.job_action),
        *actions("/hyperjobs/{namespace}/{name}", views_hyperjobs.VERBS, views_hyperjobs.hyperjob_action),
        *actions("/queues/{name}", views_queues.VERBS, views_queues.queue_state),
        *actions("/clusters/{name}", views_clusters.VERBS, views_clusters.cluster_action),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return out


def actions(base: str, verbs: Iterable[str], fn: Callable[[Request], Awaitable[Response]]) -> list[Route]:
    """One POST route per verb, spelt exactly, on the page and under /api/: any other verb is no
    route at all (404), so a verb added later can never fall into another's action."""
    return [
        Route(f"{prefix}{base}/{verb}", fn, methods=["POST"], name=f"{prefix}{base}/{verb}")
        for prefix in ("", "/api")
        for verb in verbs
    ]


async def healthz(_request: Request) -> Response:
    return Response("ok\n", media_type="text/plain")


def create_app(
    dial: Dial,
    *,
    tls: bool,
    hosts: frozenset[str] = frozenset({"localhost", "127.0.0.1", "::1"}),
    login_token: str = "",
    no_login: bool = False,
) -> Starlette:
    """The app for a hub at ``dial`` (its token, if any, is dropped); ``tls``: served over HTTPS;
    ``hosts``: the names it answers to; ``login_token``: what logs in when the hub is open (no
    tokens of its own), unless ``no_login`` (loopback only) lets every caller in then."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        gateway = Gateway(dial)
        app.state.gateway = gateway
        app.state.sessions = Sessions(gateway)
        app.state.tls = tls
        app.state.login_token = login_token
        app.state.no_login = no_login
        try:
            yield
        finally:
            await app.state.sessions.watches.close()
            await gateway.close()

    middleware = [Middleware(Guards, hosts=hosts), Middleware(SecurityHeaders)]
    return Starlette(routes=routes(), lifespan=lifespan, middleware=middleware)
