"""The local viewer app: ``create_app(paths)`` builds it; ``rescue-bench view RUN...`` serves it.

Read-only, no accounts: it is meant for 127.0.0.1. Every response carries a strict Content-Security-Policy
(the only script is the package's own static file), and every page is rendered with autoescaping. Errors, bad
input included, are pages that say what is wrong, never a traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from rescue_bench.errors import BenchError, ConfigError
from rescue_bench.view import pages, robustness
from rescue_bench.view.data import RunSource, RunView, SourceCache, signature
from rescue_bench.view.filters import BadQuery, Query, parse_query
from rescue_bench.view.links import ServerLinks
from rescue_bench.view.render import CSP, make_environment, render_page

log = logging.getLogger(__name__)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class NotFound(Exception):
    pass


class Viewer:
    """The runs being viewed and what was computed from them."""

    def __init__(self, paths: Sequence[Path], *, redact: bool = False) -> None:
        self.sources = [RunSource(Path(p), i) for i, p in enumerate(paths)]
        self.data = SourceCache()
        self.redact = redact
        self.env = make_environment()
        self.links = ServerLinks()
        self._lock = threading.Lock()
        self._compared: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        self._robust: dict[tuple[Any, ...], Mapping[str, Any]] = {}

    def views(self) -> list[RunView]:
        return [source.get() for source in self.sources]

    def compared(self, a: RunView, b: RunView) -> Mapping[str, Any]:
        key = (a.index, b.index, signature(a.path), signature(b.path))
        with self._lock:
            if key not in self._compared:
                self._compared[key] = pages.comparison_result(a, b)
            return self._compared[key]

    def robustness(self, views: Sequence[RunView], base: int) -> Mapping[str, Any]:
        """The robustness page's context, computed once per state of the runs (its CIs take a while)."""
        key = (base, *(signature(v.path) for v in views))
        with self._lock:
            if key not in self._robust:
                self._robust[key] = robustness.robustness_page(views, base)
            return self._robust[key]

    def page(
        self, name: str, context: Mapping[str, Any], views: Sequence[RunView], status: int = 200
    ) -> HTMLResponse:
        html = render_page(self.env, name, context, links=self.links, views=views, redact=self.redact)
        return HTMLResponse(html, status_code=status)

    def message(self, status: int, title: str, text: str) -> HTMLResponse:
        return self.page("message.html", {"title": title, "text": text}, [], status)


def _viewer(request: Request) -> Viewer:
    found: Viewer = request.app.state.viewer
    return found


def _query(request: Request, views: Sequence[RunView]) -> Query:
    query = parse_query(dict(request.query_params))
    if not 0 <= query.run < len(views):
        raise BadQuery(f"bad query: run={query.run}; the viewer has runs 0 to {len(views) - 1}")
    tasks = views[query.run].tasks
    if not query.task and tasks:
        return replace(query, task=tasks[0])
    if query.task not in tasks:
        raise NotFound()
    return query


def create_app(paths: Sequence[Path], *, redact: bool = False) -> FastAPI:
    """The viewer of the run directories ``paths`` (each read on first use, again after it changes)."""
    app = FastAPI(title="rescue-bench view", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.viewer = Viewer(paths, redact=redact)
    app.mount("/static", StaticFiles(packages=[("rescue_bench.view", "static")]), name="static")
    _list_routes(app)
    _other_routes(app)
    _robustness_routes(app)
    _handlers(app)
    return app


def _list_routes(app: FastAPI) -> None:
    @app.get("/")
    def overview(request: Request) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        return viewer.page("overview.html", pages.overview(views), views)

    @app.get("/instances")
    def instances(request: Request) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        query = _query(request, views)
        source = viewer.data.get(views[query.run]) if query.q.strip() and not viewer.redact else None
        return viewer.page(
            "instances.html", pages.instances(views, query, source, texts=not viewer.redact), views
        )

    @app.get("/instances/{instance_id:path}")
    def instance(request: Request, instance_id: str) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        query = _query(request, views)
        source = None if viewer.redact else viewer.data.get(views[query.run])
        context = pages.instance(views, query, instance_id, source, None, texts=not viewer.redact)
        if context is None:
            raise NotFound()
        return viewer.page("instance.html", context, views)


def _other_routes(app: FastAPI) -> None:
    @app.get("/compare")
    def compare(request: Request, a: int = 0, b: int = 1) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        if not (0 <= a < len(views) and 0 <= b < len(views)) or a == b:
            raise BadQuery(f"bad query: compare needs two different runs among 0 to {len(views) - 1}")
        context = pages.compare(views[a], views[b], viewer.compared(views[a], views[b]))
        return viewer.page("compare.html", {**context, "lists": []}, views)

    @app.get("/matrices")
    def matrices(request: Request, run: int = 0) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        if not 0 <= run < len(views):
            raise NotFound()
        return viewer.page("matrices.html", pages.matrices(views[run]), views)


def _robustness_routes(app: FastAPI) -> None:
    @app.get("/robustness")
    def robustness_table(request: Request, base: int = 0) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        try:
            context = viewer.robustness(views, base)
        except ConfigError as exc:
            return viewer.message(400, "Cannot compare these runs", str(exc))
        return viewer.page("robustness.html", context, views)

    @app.get("/flipped")
    def flipped(request: Request, run: int, task: str, base: int = 0) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        try:
            context = robustness.flipped_page(views, base, run, task)
        except ConfigError as exc:
            return viewer.message(400, "Cannot compare these runs", str(exc))
        return viewer.page("flipped.html", context, views)


def _handlers(app: FastAPI) -> None:
    @app.middleware("http")
    async def _headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.exception_handler(BadQuery)
    async def _bad_query(request: Request, exc: BadQuery) -> Response:
        return _viewer(request).message(400, "Bad request", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return _viewer(request).message(400, "Bad request", f"bad query: {where}")

    @app.exception_handler(BenchError)
    async def _bench(request: Request, exc: BenchError) -> Response:
        return _viewer(request).message(500, "Cannot read the run", str(exc))

    @app.exception_handler(NotFound)
    async def _not_found(request: Request, _exc: NotFound) -> Response:
        return _viewer(request).message(404, "Not found", "There is nothing here.")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return _viewer(request).message(exc.status_code, "Error", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s", request.url.path)
        return _viewer(request).message(500, "Internal error", f"{type(exc).__name__}: {exc}")
