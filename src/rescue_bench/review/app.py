"""The verification web app: ``create_app(settings)`` builds it; ``rescue-bench review serve`` runs it.

Every page except the login form and the stylesheet needs a signed-in user. Every POST carries the session's
CSRF token. Responses carry a strict Content-Security-Policy (no scripts at all, media from this site only),
so even text that somehow escaped escaping could not run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from rescue_bench.hosts import allowed_host
from rescue_bench.review import admin, pages, rating_views, review_pages
from rescue_bench.review.auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    LoginLimiter,
    SessionCodec,
    authenticate,
    safe_next,
    tokens_match,
)
from rescue_bench.review.db import User, open_store, secret_key
from rescue_bench.review.settings import ReviewSettings
from rescue_bench.review.web import (
    DB,
    AppState,
    BadInput,
    CheckedForm,
    CsrfFailed,
    CurrentUser,
    Forbidden,
    FormTooLarge,
    NotAuthenticated,
    NotFound,
    make_templates,
    redirect,
    render,
    secure_cookie,
    state,
)

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def create_app(settings: ReviewSettings) -> FastAPI:
    """The app for ``settings``: migrates the database, then serves the pages."""
    sessions = open_store(settings.db_url)
    with sessions() as session:
        secret = secret_key(session)
    app = FastAPI(title="rescue-bench review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.review = AppState(
        settings=settings,
        sessions=sessions,
        codec=SessionCodec(secret, settings.session_max_age),
        limiter=LoginLimiter(settings.login_max_failures, settings.login_window_sec, settings.clock),
        templates=make_templates(),
        backend=sessions.kw["bind"].dialect.name,
        hashing=asyncio.Semaphore(max(1, settings.login_hash_concurrency)),
    )
    app.mount("/static", StaticFiles(packages=[("rescue_bench.review", "static")]), name="static")
    app.include_router(_auth_router())
    app.include_router(pages.router)
    app.include_router(review_pages.router)
    app.include_router(admin.router)
    app.include_router(rating_views.router)
    _install_handlers(app)
    return app


def _install_handlers(app: FastAPI) -> None:
    """The security headers of every response, and a page for each refusal (never a traceback)."""
    app.middleware("http")(_headers)
    app.exception_handler(NotAuthenticated)(_login)
    app.exception_handler(Forbidden)(_forbidden)
    app.exception_handler(CsrfFailed)(_csrf)
    app.exception_handler(NotFound)(_not_found)
    app.exception_handler(FormTooLarge)(_too_large)
    app.exception_handler(BadInput)(_bad_input)
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(StarletteHTTPException)(_http)


async def _headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    settings = state(request).settings
    if not allowed_host(request.headers.get("host", ""), settings.allowed_hosts, settings.port):
        # DNS rebinding: a page of another site whose name now points at this address. Plain text, and
        # before the login limit or any page: such a page can neither read the app nor lock its users out.
        response: Response = PlainTextResponse(
            "421 Misdirected Request: this review app answers only the addresses it was started for "
            "(loopback names, the bound address, --allow-host).",
            status_code=421,
        )
    else:
        response = await call_next(request)
    for name, value in SECURITY_HEADERS.items():
        if name == "Cache-Control" and name in response.headers:
            continue
        response.headers.setdefault(name, value)
    if request.url.scheme == "https":
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    return response


async def _login(request: Request, _exc: NotAuthenticated) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    response = RedirectResponse(f"/login?next={_quote(target)}", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


async def _forbidden(request: Request, _exc: Forbidden) -> Response:
    return _message(request, 403, "Not allowed", "This page is for administrators.")


async def _csrf(request: Request, _exc: CsrfFailed) -> Response:
    return _message(
        request,
        403,
        "Form refused",
        "The form did not carry this session's security token. Go back, reload the page and try "
        "again; nothing was changed.",
    )


async def _not_found(request: Request, _exc: NotFound) -> Response:
    return _message(request, 404, "Not found", "There is nothing here.")


async def _too_large(request: Request, exc: FormTooLarge) -> Response:
    kept = {name: values for name, values in exc.form.items() if name not in HIDDEN_FIELDS}
    return render(request, "too_large.html", status_code=413, problems=exc.problems, kept=kept, user=None)


async def _bad_input(request: Request, exc: BadInput) -> Response:
    return _message(request, 400, "Bad request", f"{exc} Nothing was changed.")


async def _invalid(request: Request, _exc: RequestValidationError) -> Response:
    return _message(request, 404, "Not found", "There is nothing here.")


async def _http(request: Request, exc: StarletteHTTPException) -> Response:
    return _message(request, exc.status_code, "Error", str(exc.detail))


HIDDEN_FIELDS = frozenset({"csrf_token", "base_version", "conflict_id", "row_id", "action"})
"""Fields not worth showing back when a form is refused: the page shows what the user typed."""


def _message(request: Request, status: int, title: str, text: str) -> HTMLResponse:
    return render(request, "message.html", status_code=status, title=title, text=text, user=None)


def _quote(value: str) -> str:
    return quote(value, safe="/")


class LoginForm(BaseModel):
    """The login form's fields (anything else posted is ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str = ""
    password: str = ""
    next: str = "/"
    csrf_token: str = ""


def _auth_router() -> APIRouter:
    router = APIRouter()

    @router.get("/login")
    def login_page(request: Request, next: str = "/") -> Response:
        return _login_form(request, safe_next(next), error=None, status=200)

    @router.post("/login")
    async def login_submit(request: Request, form: Annotated[LoginForm, Form()]) -> Response:
        app_state = state(request)
        expected = app_state.codec.read_login_token(request.cookies.get(LOGIN_COOKIE))
        if not tokens_match(expected, form.csrf_token):
            raise CsrfFailed()
        name, password = form.name.strip(), form.password
        target = safe_next(form.next)
        address = request.client.host if request.client else "?"
        # per address, and per account *at* an address: failures from one place never lock the owner out
        # when they sign in from another
        keys = [f"ip:{address}", f"name:{name.lower()}@{address}"]
        # Counted before the hash is checked: logins sent all at once cannot pass the limit together.
        wait, attempt = app_state.limiter.attempt(keys)
        if wait > 0:
            response = _login_form(
                request, target, f"Too many failed logins. Try again in {int(wait) + 1} s.", 429
            )
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        async with app_state.hashing:  # argon2 takes 64 MiB a check: a few at a time, the rest wait
            user = await run_in_threadpool(_authenticate, app_state, name, password)
        if user is None:
            return _login_form(request, target, "Wrong name or password.", 401)
        app_state.limiter.succeeded(keys, attempt)
        return _signed_in(request, user, target)

    @router.post("/logout")
    def logout(form: CheckedForm, user: CurrentUser, session: DB) -> Response:
        user.session_epoch += 1  # ends this session and every other one of the user
        session.commit()
        response = redirect("/login")
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    return router


def _signed_in(request: Request, user: User, target: str) -> Response:
    codec = state(request).codec
    response = redirect(target)
    response.set_cookie(
        SESSION_COOKIE,
        codec.new_session(user),
        max_age=codec.max_age,
        httponly=True,
        samesite="lax",
        secure=secure_cookie(request),
        path="/",
    )
    response.delete_cookie(LOGIN_COOKIE, path="/")
    return response


def _authenticate(app_state: AppState, name: str, password: str) -> User | None:
    with app_state.sessions() as session:
        return authenticate(session, name, password, app_state.settings.hasher)


def _login_form(request: Request, target: str, error: str | None, status: int) -> HTMLResponse:
    token, cookie = state(request).codec.new_login_token()
    response = render(
        request, "login.html", status_code=status, login_token=token, next=target, error=error, user=None
    )
    response.set_cookie(
        LOGIN_COOKIE,
        cookie,
        max_age=3600,
        httponly=True,
        samesite="lax",
        secure=secure_cookie(request),
        path="/",
    )
    return response
