"""The dashboard's ASGI app: its routes, the static files, and the hub channel it holds."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
    views_job,
    views_jobs,
    views_login,
    views_overview,
    views_queues,
    views_workflows,
)
from vglobal.dashboard.gateway import Gateway
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
        ("/queues", views_queues.queues_page),
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
        Route("/jobs/{namespace}/{name}/{verb:str}", views_job.job_action, methods=["POST"]),
        Route("/api/jobs/{namespace}/{name}/{verb:str}", views_job.job_action, methods=["POST"]),
        Route("/queues", views_queues.queue_apply, methods=["POST"]),
        Route("/api/queues", views_queues.queue_apply, methods=["POST"]),
        Route("/queues/{name}/{verb:str}", views_queues.queue_state, methods=["POST"]),
        Route("/api/queues/{name}/{verb:str}", views_queues.queue_state, methods=["POST"]),
        Route("/clusters/{name}/{verb:str}", views_clusters.cluster_action, methods=["POST"]),
        Route("/api/clusters/{name}/{verb:str}", views_clusters.cluster_action, methods=["POST"]),
        Route("/cronjobs", views_workflows.cronjobs_page),
        Route("/api/cronjobs", views_workflows.cronjobs_page),
        Route("/jobflows", views_workflows.jobflows_page),
        Route("/api/jobflows", views_workflows.jobflows_page),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return out


async def healthz(_request: Request) -> Response:
    return Response("ok\n", media_type="text/plain")


def create_app(dial: Dial, *, tls: bool) -> Starlette:
    """The app for a hub at ``dial`` (its token, if any, is dropped); ``tls``: served over HTTPS."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        gateway = Gateway(dial)
        app.state.gateway = gateway
        app.state.sessions = Sessions(gateway)
        app.state.tls = tls
        try:
            yield
        finally:
            await gateway.close()

    return Starlette(routes=routes(), lifespan=lifespan, middleware=[Middleware(SecurityHeaders)])
