"""Shared plumbing of the pages: app state, request dependencies (database session, signed-in user,
CSRF-checked form) and template rendering with autoescaping."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import parse_qsl, quote

from fastapi import Depends, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, StrictUndefined
from sqlalchemy.orm import Session, sessionmaker

from rescue_bench.review import views
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


class BadInput(Exception):
    """A request value that cannot be used (a malformed number, say): a 400 page with the message."""


MAX_ID = 2**31 - 1
"""The largest id and version number (a PostgreSQL ``INTEGER``); anything longer is refused up front, so a
20-digit or 5,000-digit value never reaches the database driver or ``int()``'s digit limit."""

Pk = Annotated[int, Path(ge=1, le=MAX_ID)]
"""An id in a URL path; anything else (``abc``, ``-1``, ``\u0661\u0662``, 20 digits) is a 404 page."""


@dataclass
class AppState:
    settings: ReviewSettings
    sessions: sessionmaker[Session]
    codec: SessionCodec
    limiter: LoginLimiter
    templates: Environment
    backend: str
    hashing: asyncio.Semaphore
    """Bounds the password checks in flight (``settings.login_hash_concurrency``)."""


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

FORM_HARD_LIMIT_FACTOR = 4
"""A body up to this many times ``max_form_bytes`` is still read, so that the page refusing it can give the
user's text back; a larger one is cut off unread."""


class FormTooLarge(Exception):
    """A posted form over a size limit: the page says which limit and shows the user's text again."""

    def __init__(self, problems: list[str], form: Form) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        self.form = form


@dataclass(frozen=True)
class SizedForm:
    """A CSRF-checked form and what in it is over the limits (empty when nothing is)."""

    fields: Form
    too_large: list[str]


async def sized_form(request: Request) -> SizedForm:
    """The posted form (name -> values) after its CSRF check, with any size problems listed, not raised.

    Only URL-encoded bodies are read (every form of the app is one). Starlette's own parser would answer a
    field over 1 MB with a bare 400 and lose the text, so the body is read here, with its limits.
    """
    data = _session_data(request)
    if data is None:
        raise NotAuthenticated()
    limits = state(request).settings
    body, complete = await _read_body(request, limits.max_form_bytes * FORM_HARD_LIMIT_FACTOR)
    try:
        pairs = parse_qsl(
            body.decode("latin-1"), keep_blank_values=True, max_num_fields=limits.max_form_fields
        )
    except ValueError:
        pairs, complete = [], False
    form: Form = {}
    for name, value in pairs:
        form.setdefault(name, []).append(value)
    if not complete:  # refused before the CSRF check: nothing changes either way
        raise FormTooLarge(
            [f"The form is larger than {_size(len(body))} or has more than {limits.max_form_fields} fields "
             f"(the limit is {_size(limits.max_form_bytes)}); it was not read."], {}
        )  # fmt: skip
    if not tokens_match(data.csrf, one(form, "csrf_token")):
        raise CsrfFailed()
    return SizedForm(form, _size_problems(form, len(body), limits.max_form_bytes, limits.max_field_chars))


async def checked_form(request: Request) -> Form:
    """The posted form, CSRF-checked; :class:`FormTooLarge` when something in it is over a limit."""
    posted = await sized_form(request)
    if posted.too_large:
        raise FormTooLarge(posted.too_large, posted.fields)
    return posted.fields


async def _read_body(request: Request, cap: int) -> tuple[bytes, bool]:
    """The body, up to ``cap`` bytes; ``False`` when it was longer (the rest is not read)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            return bytes(body[:cap]), False
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if body and kind != "application/x-www-form-urlencoded":
        raise BadInput("Forms are accepted URL-encoded only (as a browser sends them).")
    return bytes(body), True


def _size_problems(form: Form, size: int, max_bytes: int, max_chars: int) -> list[str]:
    problems = [
        f"The field {name!r} has {len(value):,} characters; the limit is {max_chars:,}."
        for name, values in form.items()
        for value in values
        if len(value) > max_chars
    ]
    if size > max_bytes:
        problems.append(f"The form has {_size(size)}; the limit is {_size(max_bytes)}.")
    return problems


def _size(count: int) -> str:
    """
    >>> _size(2 * 1024 * 1024), _size(1500)
    ('2.0 MB', '1.5 kB')
    """
    return f"{count / 1024 / 1024:.1f} MB" if count >= 1024 * 1024 else f"{count / 1024:.1f} kB"


def check_length(form: Form, name: str, label: str, limit: int) -> str:
    """The field ``name``, stripped; :class:`FormTooLarge` (text kept) when it is longer than ``limit``."""
    text = one(form, name).strip()
    if len(text) > limit:
        raise FormTooLarge([f"The {label} has {len(text):,} characters; the limit is {limit:,}."], form)
    return text


DB = Annotated[Session, Depends(db)]
CurrentUser = Annotated[User, Depends(current_user)]
AdminUser = Annotated[User, Depends(admin_user)]
CheckedForm = Annotated[Form, Depends(checked_form)]
EditorForm = Annotated[SizedForm, Depends(sized_form)]


def one(form: Form, name: str, default: str = "") -> str:
    values = form.get(name)
    return values[0] if values else default


def parse_id(text: str) -> int | None:
    """``text`` as a number from 0 to :data:`MAX_ID`, or ``None``: ASCII digits only (``int`` would also
    read ``'\u0661\u0662'`` and choke on ``'\u00b9'``), at most ten of them.

    >>> parse_id("12"), parse_id("\u0661\u0662"), parse_id("\u00b9"), parse_id("9" * 20), parse_id("")
    (12, None, None, None, None)
    """
    if not (0 < len(text) <= 10 and text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= MAX_ID else None


def form_id(form: Form, name: str) -> int | None:
    """The form field ``name`` as a number; ``None`` when empty; :class:`BadInput` when malformed."""
    text = one(form, name).strip()
    if not text:
        return None
    value = parse_id(text)
    if value is None:
        shown = text if len(text) <= 24 else f"{text[:24]}... ({len(text)} characters)"
        raise BadInput(f"The form field {name!r} must be a whole number from 0 to {MAX_ID} (got {shown!r}).")
    return value


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
    env.filters["row_head"] = views.row_head
    env.filters["draft_notes"] = views.draft_notes
    env.filters["event_detail"] = views.event_detail
    env.filters["differing"] = views.differing
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
