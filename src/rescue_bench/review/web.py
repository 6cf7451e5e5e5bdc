"""Shared plumbing of the pages: app state, request dependencies (database session, signed-in user,
CSRF-checked form) and template rendering with autoescaping."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, StrictUndefined
from sqlalchemy.orm import Session, sessionmaker

from rescue_bench.review.auth import SESSION_COOKIE, LoginLimiter, SessionCodec, SessionData, tokens_match
from rescue_bench.review.db import User
from rescue_bench.review.settings import ReviewSettings


class NotAuthenticated(Exception):
    """No valid session: the visitor is sent to the login page."""


class Forbidden(Exception):
    """Signed in, but not allowed (for example an annotator on an admin page)."""


class CsrfFailed(Exception):
    """A form without the session's CSRF token."""


class NotFound(Exception):
    pass


@dataclass
class AppState:
    settings: ReviewSettings
    sessions: sessionmaker[Session]
    codec: SessionCodec
    limiter: LoginLimiter
    templates: Environment
    backend: str


def state(request: Request) -> AppState:
    found: AppState = request.app.state.review
    return found


def db(request: Request) -> Iterator[Session]:
    with state(request).sessions() as session:
        yield session


def _session_data(request: Request) -> SessionData | None:
    return state(request).codec.read_session(request.cookies.get(SESSION_COOKIE))


def current_user(request: Request, session: Annotated[Session, Depends(db)]) -> User:
    data = _session_data(request)
    user = session.get(User, data.user_id) if data else None
    if data is None or user is None or not user.active or user.session_epoch != data.epoch:
        raise NotAuthenticated()
    request.state.csrf = data.csrf
    return user


def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    if not user.is_admin:
        raise Forbidden()
    return user


Form = dict[str, list[str]]


async def checked_form(request: Request) -> Form:
    """The posted form as name -> values, after checking its CSRF token against the session's."""
    data = _session_data(request)
    if data is None:
        raise NotAuthenticated()
    form = await request.form()
    token = form.get("csrf_token")
    if not tokens_match(data.csrf, token):
        raise CsrfFailed()
    return {key: [v for v in form.getlist(key) if isinstance(v, str)] for key in form}


DB = Annotated[Session, Depends(db)]
CurrentUser = Annotated[User, Depends(current_user)]
AdminUser = Annotated[User, Depends(admin_user)]
CheckedForm = Annotated[Form, Depends(checked_form)]


def one(form: Form, name: str, default: str = "") -> str:
    values = form.get(name)
    return values[0] if values else default


def is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def secure_cookie(request: Request) -> bool:
    return state(request).settings.secure_cookies == "always" or is_https(request)


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    env = state(request).templates
    csrf = getattr(request.state, "csrf", None)
    html = env.get_template(template).render(request=request, csrf_token=csrf, **context)
    return HTMLResponse(html, status_code=status_code)


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


# -- templates -----------------------------------------------------------------------------------------------


def make_templates() -> Environment:
    """Jinja2 with autoescaping on for every template: all text from data and users is escaped."""
    env = Environment(
        loader=PackageLoader("rescue_bench.review", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = fmt_when
    env.filters["seconds"] = fmt_seconds
    env.filters["pretty"] = pretty
    env.filters["urlpath"] = lambda value: quote(str(value), safe="/")
    return env


def fmt_when(value: datetime | None) -> str:
    """``2025-03-01 14:05 UTC`` (naive times, as SQLite returns them, are UTC).

    >>> fmt_when(datetime(2025, 3, 1, 14, 5)), fmt_when(None)
    ('2025-03-01 14:05 UTC', '')
    """
    if value is None:
        return ""
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def fmt_seconds(value: float | None) -> str:
    """A duration for display.

    >>> fmt_seconds(3.456), fmt_seconds(None)
    ('3.5 s', '')
    """
    return "" if value is None else f"{value:.1f} s"


def pretty(value: Any) -> str:
    """A JSON value for display (the template escapes it).

    >>> pretty({"a": [1, "x"]})
    '{\\n  "a": [\\n    1,\\n    "x"\\n  ]\\n}'
    >>> pretty(None)
    '(empty)'
    """
    if value is None:
        return "(empty)"
    return json.dumps(value, ensure_ascii=False, indent=2)
