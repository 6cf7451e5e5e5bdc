"""Test helpers: sign in, and read a form out of a page the way a browser would submit it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.review.auth import create_user
from rescue_bench.review.db import RowRecord, user_by_name
from rescue_bench.review.reviews import save_review
from rescue_bench.review.settings import ReviewSettings, host_names

PASSWORD = "correct horse battery"
# Cheap argon2 parameters keep the tests fast; the app verifies with whatever parameters a hash carries.
FAST_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


class Client(TestClient):
    """A test client that remembers its session's CSRF token."""

    csrf: str = ""


def settings_for(db_url: str, workdir: Path | None, **overrides: Any) -> ReviewSettings:
    overrides.setdefault("allowed_hosts", host_names(["testserver"]))  # the test client's Host
    return ReviewSettings(db_url=db_url, media_root=workdir, hasher=FAST_HASHER, **overrides)


TOKEN = re.compile(r'name="csrf_token" value="([^"]*)"')


def csrf_of(html: str) -> str:
    found = TOKEN.search(html)
    assert found, "page has no CSRF token"
    return found.group(1)


def login(client: TestClient, name: str, password: str = PASSWORD) -> str:
    """Sign ``client`` in; return the session's CSRF token."""
    page = client.get("/login")
    response = client.post(
        "/login", data={"name": name, "password": password, "csrf_token": csrf_of(page.text)}
    )
    assert response.status_code == 303, response.text
    return csrf_of(client.get("/").text)


class _FormReader(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("id") == self.form_id:
            self.inside = True
        if not self.inside:
            return
        if tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind not in ("submit", "button"):
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select, self._options = a.get("name"), []
        elif tag == "option" and self._select is not None:
            self._options.append((a.get("value", ""), "selected" in a))
        elif tag == "textarea":
            self._textarea, self._text = a.get("name"), []

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "select" and self._select is not None:
            chosen = [v for v, sel in self._options if sel] or [v for v, _ in self._options[:1]]
            self.fields += [(self._select, v) for v in chosen]
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            self.fields.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None


def form_fields(html: str, form_id: str = "editor") -> list[tuple[str, str]]:
    """The (name, value) pairs a browser would post for the form ``form_id`` (no submit button)."""
    reader = _FormReader(form_id)
    reader.feed(html)
    assert reader.fields, f"no form {form_id!r} in the page"
    return reader.fields


def replace(fields: list[tuple[str, str]], name: str, value: str) -> list[tuple[str, str]]:
    """Set the single-valued field ``name`` to ``value``."""
    assert any(k == name for k, _ in fields), f"no field {name}"
    return [(k, value if k == name else v) for k, v in fields]


def post_form(client: TestClient, url: str, fields: list[tuple[str, str]], action: str = "save"):  # type: ignore[no-untyped-def]
    """Post a form with repeated names kept (as a browser does)."""
    body = "&".join(f"{_q(k)}={_q(v)}" for k, v in [*fields, ("action", action)])
    return client.post(url, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})


def _q(text: str) -> str:
    from urllib.parse import quote_plus

    return quote_plus(text)


def raw_get(app: object, raw_path: str, cookie: str = "") -> tuple[int, bytes]:
    """GET ``raw_path`` byte for byte, as a client that keeps ``..`` would send it (httpx drops it)."""
    from urllib.parse import unquote

    import anyio

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote(raw_path),
        "raw_path": raw_path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"cookie", cookie.encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    status = 0
    body = bytearray()

    requested = False

    async def call() -> None:
        done = anyio.Event()

        async def receive() -> dict[str, object]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])  # type: ignore[call-overload]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))  # type: ignore[arg-type]
                if not message.get("more_body"):
                    done.set()

        await app(scope, receive, send)  # type: ignore[operator]

    anyio.run(call)
    return status, bytes(body)


def cookie_header(client: TestClient) -> str:
    return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def review_all(session: Session, name: str = "reviewer") -> None:
    """Record a review of every row's current values by ``name`` (created as an annotator when missing)."""
    user = user_by_name(session, name) or create_user(session, name, "annotator", PASSWORD, FAST_HASHER)
    for row in session.scalars(select(RowRecord)):
        save_review(session, row, user, row.data, commit=False)
    session.commit()
