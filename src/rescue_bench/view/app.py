"""The local viewer app: ``create_app(paths)`` builds it; ``rescue-bench view RUN...`` serves it.

Read-only, no accounts: it is meant for 127.0.0.1. A request whose ``Host`` header names anything but the
loopback names, the bound address (and port) or a ``--host`` given is refused (421): a web page cannot read
the runs through DNS rebinding. Every response carries a strict Content-Security-Policy (the only script is
the package's own static file), and every page is rendered with autoescaping. Errors, bad input included,
are pages that say what is wrong, never a traceback; a damaged run shows its error on its own pages while
the other runs stay viewable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from rescue_bench.errors import BenchError, ConfigError
from rescue_bench.hosts import LOOPBACK_NAMES, allowed_host
from rescue_bench.view import many, pages, robustness
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


@dataclass(frozen=True, slots=True)
class Broken:
    """A run directory that cannot be read: its pages show the error, the other runs stay viewable."""

    index: int
    path: Path
    error: str


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
        self._many_lock = threading.Lock()
        self._many: dict[tuple[Any, ...], Mapping[str, Any]] = {}

    def views(self) -> list[RunView]:
        """The runs that can be read now (each keeps its index among the runs given)."""
        return self.state()[0]

    def state(self) -> tuple[list[RunView], list[Broken]]:
        """The runs that can be read, and those that cannot with their error."""
        views, broken = [], []
        for source in self.sources:
            try:
                views.append(source.get())
            except BenchError as exc:
                broken.append(Broken(source.index, source.path, str(exc)))
        return views, broken

    def run(self, index: int) -> RunView:
        """One run by its index; its own error when it is damaged."""
        if not 0 <= index < len(self.sources):
            raise BadQuery(f"bad query: run={index}; the viewer has runs 0 to {len(self.sources) - 1}")
        return self.sources[index].get()

    def compared(self, a: RunView, b: RunView) -> Mapping[str, Any]:
        key = (a.index, b.index, signature(a.path), signature(b.path))
        with self._lock:
            if key not in self._compared:
                self._compared[key] = pages.comparison_result(a, b)
            return self._compared[key]

    def many(self, views: Sequence[RunView]) -> Mapping[str, Any]:
        """The many-way comparisons per perturbation variant, computed once per state of the runs."""
        key = tuple((v.index, signature(v.path)) for v in views)
        with self._many_lock:  # its own lock: the other pages do not wait for this bootstrap
            if key not in self._many:
                self._many[key] = many.variant_results(views)
            return self._many[key]

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
        return self.page("message.html", {"title": title, "text": text}, self.views(), status)


def _viewer(request: Request) -> Viewer:
    found: Viewer = request.app.state.viewer
    return found


def _query(request: Request, viewer: Viewer) -> Query:
    query = parse_query(dict(request.query_params))
    tasks = viewer.run(query.run).tasks
    if query.vs is not None:
        viewer.run(query.vs)
    if not query.task and tasks:
        return replace(query, task=tasks[0])
    if query.task not in tasks:
        raise NotFound()
    return query


def create_app(
    paths: Sequence[Path], *, redact: bool = False, hosts: Sequence[str] = (), port: int | None = None
) -> FastAPI:
    """The viewer of the run directories ``paths`` (each read on first use, again after it changes).

    It answers requests whose ``Host`` is a loopback name or one of ``hosts`` (the bound address, ``--host``),
    on ``port`` when given; anything else gets 421.
    """
    app = FastAPI(title="rescue-bench view", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.viewer = Viewer(paths, redact=redact)
    app.state.hosts = LOOPBACK_NAMES | {h.strip().strip("[]").lower() for h in hosts}
    app.state.port = port
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
        views, broken = viewer.state()
        return viewer.page("overview.html", {**pages.overview(views), "broken": broken}, views)

    @app.get("/instances")
    def instances(request: Request) -> Response:
        viewer = _viewer(request)
        query = _query(request, viewer)
        views = viewer.views()
        source = viewer.data.get(viewer.run(query.run)) if query.q.strip() and not viewer.redact else None
        return viewer.page(
            "instances.html", pages.instances(views, query, source, texts=not viewer.redact), views
        )

    @app.get("/instances/{instance_id:path}")
    def instance(request: Request, instance_id: str) -> Response:
        viewer = _viewer(request)
        query = _query(request, viewer)
        views = viewer.views()
        source = None if viewer.redact else viewer.data.get(viewer.run(query.run))
        context = pages.instance(views, query, instance_id, source, None, texts=not viewer.redact)
        if context is None:
            raise NotFound()
        return viewer.page("instance.html", context, views)


def _other_routes(app: FastAPI) -> None:
    @app.get("/leaderboard")
    def leaderboard(request: Request) -> Response:
        viewer = _viewer(request)
        views = viewer.views()
        return viewer.page("leaderboard.html", many.leaderboard(views, viewer.many(views)), views)

    @app.get("/compare")
    def compare(request: Request, a: int | None = None, b: int | None = None) -> Response:
        viewer = _viewer(request)
        if a is None or b is None:
            views = viewer.views()
            return viewer.page("many.html", many.compare_page(views, viewer.many(views)), views)
        if a == b:
            raise BadQuery(
                f"bad query: compare needs two different runs among 0 to {len(viewer.sources) - 1}"
            )
        run_a, run_b = viewer.run(a), viewer.run(b)
        views = viewer.views()
        context = pages.compare(run_a, run_b, viewer.compared(run_a, run_b))
        return viewer.page("compare.html", {**context, "lists": []}, views)

    @app.get("/matrices")
    def matrices(request: Request, run: int = 0) -> Response:
        viewer = _viewer(request)
        chosen = viewer.run(run)
        return viewer.page("matrices.html", pages.matrices(chosen), viewer.views())


def _robustness_routes(app: FastAPI) -> None:
    @app.get("/robustness")
    def robustness_table(request: Request, base: int = 0) -> Response:
        viewer = _viewer(request)
        views = [viewer.run(i) for i in range(len(viewer.sources))]
        try:
            context = viewer.robustness(views, base)
        except ConfigError as exc:
            return viewer.message(400, "Cannot compare these runs", str(exc))
        return viewer.page("robustness.html", context, views)

    @app.get("/flipped")
    def flipped(request: Request, run: int, task: str, base: int = 0) -> Response:
        viewer = _viewer(request)
        views = [viewer.run(i) for i in range(len(viewer.sources))]
        try:
            context = robustness.flipped_page(views, base, run, task)
        except ConfigError as exc:
            return viewer.message(400, "Cannot compare these runs", str(exc))
        return viewer.page("flipped.html", context, views)


def _handlers(app: FastAPI) -> None:
    @app.middleware("http")
    async def _headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not allowed_host(request.headers.get("host", ""), app.state.hosts, app.state.port):
            # DNS rebinding: a page of another site whose name now points at this address
            # (plain text: nothing of the runs, not even their names, goes to such a page)
            response: Response = PlainTextResponse(
                "421 Misdirected Request: this viewer answers only the addresses it was started for "
                "(loopback names, the bound address, --host).",
                status_code=421,
            )
        else:
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
