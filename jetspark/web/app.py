"""The Starlette application: two pages, a JSON API, and the cancel / suspend / resume actions.

Routes (a job is named by its number in the registry, nothing else is read from a request):

- `GET /` the jobs list; `GET /jobs/{n}` one job; `GET /api/jobs`, `GET /api/jobs/{n}` as JSON;
- `GET /metrics` every job's figures in Prometheus' text format (`jetspark.web.prometheus`);
- `GET /jobs/{n}/charts/throughput/{i}.svg` the items per second in and out of the job's i-th
  vertex over the last minutes, `GET /jobs/{n}/charts/durations.svg` its last snapshots' or
  epochs' durations (images: SVG documents drawn on the server, `jetspark.web.charts`);
- `POST /jobs/{n}/cancel|suspend|resume` with the server's token (a form field or the
  `X-Jetspark-Token` header), so that another web site open in the same browser cannot press the
  buttons (a cross-site form post does not know the token). Requests whose `Host` is not the
  server's own are refused (no DNS rebinding onto a loopback server).
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from jetspark.web.charts import duration_chart, rate_chart
from jetspark.web.history import HISTORY_SECONDS
from jetspark.web.pages import job_page, jobs_page
from jetspark.web.prometheus import metrics_registry
from jetspark.web.registry import JobRegistry, actions
from jetspark.web.svg import dag_svg, plan_parallelism

ACTIONS = ("cancel", "suspend", "resume")
#: How long the suspend button waits for the terminal snapshot.
SUSPEND_TIMEOUT = 120.0


def create_app(registry: JobRegistry, allowed_hosts: list[str], token: str | None = None) -> Starlette:
    """The application over `registry`; `allowed_hosts` as for Starlette's TrustedHostMiddleware."""
    token = token or secrets.token_urlsafe(24)

    def job_key(request: Request) -> int | None:
        key: int = request.path_params["key"]
        return key if registry.get(key) is not None else None

    async def jobs(request: Request) -> Response:
        return HTMLResponse(jobs_page([registry.summary(k) for k in registry.numbers()]))

    async def jobs_json(request: Request) -> Response:
        return JSONResponse([registry.summary(k) for k in registry.numbers()])

    async def job(request: Request) -> Response:
        key = job_key(request)
        if key is None:
            return PlainTextResponse("no such job", status_code=404)
        details = await run_in_threadpool(registry.details, key)
        handle = registry.get(key)
        dag = handle.dag if handle is not None else None
        svg = dag_svg(dag, plan_parallelism(handle)) if dag is not None else ""
        return HTMLResponse(job_page(details, svg, token))

    async def job_json(request: Request) -> Response:
        key = job_key(request)
        if key is None:
            return JSONResponse({"error": "no such job"}, status_code=404)
        return JSONResponse(await run_in_threadpool(registry.details, key))

    async def throughput_chart(request: Request) -> Response:
        key = job_key(request)
        handle = registry.get(key) if key is not None else None
        dag = handle.dag if handle is not None else None
        names = [vertex.name for vertex in dag] if dag is not None else []
        index: int = request.path_params["index"]
        if key is None or not 0 <= index < len(names):
            return PlainTextResponse("no such job or vertex", status_code=404)
        times, rates_in, rates_out = registry.history(key).series(names[index])
        svg = rate_chart(names[index], times, rates_in, rates_out, time.time(), HISTORY_SECONDS)
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})

    async def durations_chart(request: Request) -> Response:
        key = job_key(request)
        if key is None:
            return PlainTextResponse("no such job", status_code=404)
        title, labels, seconds = await run_in_threadpool(registry.durations, key)
        svg = duration_chart(title, labels, seconds)
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})

    async def act(request: Request) -> Response:
        key = job_key(request)
        action = request.path_params["action"]
        if key is None or action not in ACTIONS:
            return PlainTextResponse("no such job or action", status_code=404)
        form = parse_qs((await request.body()).decode("utf-8", "replace"))  # urlencoded form
        given = request.headers.get("x-jetspark-token") or next(iter(form.get("token", [])), "")
        if not secrets.compare_digest(given.encode(), token.encode()):
            return PlainTextResponse("missing or wrong token", status_code=403)
        handle = registry.get(key)
        assert handle is not None
        if not actions(handle)[action]:
            return PlainTextResponse(
                f"job {handle.name!r} is {handle.status.value}: cannot {action}", status_code=409
            )
        try:
            await run_in_threadpool(_perform, handle, action)
        except Exception as error:  # shown to the person who pressed the button
            return PlainTextResponse(f"{action} failed: {type(error).__name__}: {error}", status_code=409)
        return RedirectResponse(f"/jobs/{key}", status_code=303)

    scraped = metrics_registry(registry)

    async def metrics(request: Request) -> Response:
        text = await run_in_threadpool(generate_latest, scraped)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    routes = [
        Route("/", jobs),
        Route("/metrics", metrics),
        Route("/jobs/{key:int}", job),
        Route("/api/jobs", jobs_json),
        Route("/api/jobs/{key:int}", job_json),
        Route("/jobs/{key:int}/charts/throughput/{index:int}.svg", throughput_chart),
        Route("/jobs/{key:int}/charts/durations.svg", durations_chart),
        Route("/jobs/{key:int}/{action:str}", act, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)]
    )
    app.state.token = token
    return app


def _perform(job: Any, action: str) -> None:
    if action == "cancel":
        job.cancel()
    elif action == "suspend":
        job.suspend(timeout=SUSPEND_TIMEOUT)
    else:
        job.resume()
