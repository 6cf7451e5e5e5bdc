"""Sign-in, sessions, CSRF, the login rate limit, roles, cookies and what pages must never show."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
import time
from pathlib import Path
from typing import Any, Literal

import httpx2
import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx2 import Response
from review_helpers import FAST_HASHER, PASSWORD, Client, csrf_of, login, settings_for
from sqlalchemy import select

from rescue_bench.review.app import create_app
from rescue_bench.review.auth import SESSION_COOKIE, verify_password
from rescue_bench.review.db import Meta, RowRecord, Segment, User


def _sample_path(path: str) -> str:
    return re.sub(r"\{path:path\}", "clips/couple_s01/row_0001.mp4", re.sub(r"\{pk\}", "1", path))


def _api_routes(routes: list[Any]) -> list[APIRoute]:
    """Every API route, also inside included routers (FastAPI wraps those lazily)."""
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):
            found += _api_routes(route.original_router.routes)
    return found


def test_every_page_requires_login(app: FastAPI, anon: TestClient) -> None:
    routes = [r for r in _api_routes(app.routes) if r.path != "/login"]
    assert len(routes) >= 20  # the test walks the real route table, so a new page is covered automatically
    for route in routes:
        for method in route.methods or ():
            response = anon.request(method, _sample_path(route.path), data={"csrf_token": "x"})
            assert response.status_code == 303, (method, route.path, response.status_code)
            assert response.headers["location"].startswith("/login?next="), route.path
            assert "<form" not in response.text


def test_login_then_pages_open(ann: Client) -> None:
    for path in ("/", "/segments", "/segments/1", "/rows/1", "/rows/1/history", "/ratings"):
        assert ann.get(path).status_code in (200, 303), path
    assert "Progress per annotator" in ann.get("/").text


def test_wrong_password_is_refused(anon: TestClient) -> None:
    page = anon.get("/login")
    response = anon.post(
        "/login", data={"name": "ann", "password": "wrong password", "csrf_token": csrf_of(page.text)}
    )
    assert response.status_code == 401 and "Wrong name or password" in response.text
    assert SESSION_COOKIE not in anon.cookies


def test_login_needs_its_csrf_token(anon: TestClient) -> None:
    anon.get("/login")
    for token in ("", "forged"):
        response = anon.post("/login", data={"name": "ann", "password": PASSWORD, "csrf_token": token})
        assert response.status_code == 403
    assert SESSION_COOKIE not in anon.cookies


def test_login_is_rate_limited(db_url: str, workdir: Path) -> None:
    now = [1000.0]
    app = create_app(
        settings_for(db_url, workdir, login_max_failures=3, login_window_sec=60, clock=lambda: now[0])
    )
    with TestClient(app, follow_redirects=False) as client:
        for _ in range(3):
            token = csrf_of(client.get("/login").text)
            assert (
                client.post(
                    "/login", data={"name": "ann", "password": "nope-nope", "csrf_token": token}
                ).status_code
                == 401
            )
        token = csrf_of(client.get("/login").text)
        blocked = client.post("/login", data={"name": "ann", "password": PASSWORD, "csrf_token": token})
        assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
        assert SESSION_COOKIE not in client.cookies  # even the right password waits
        now[0] += 61
        login(client, "ann")
    app.state.review.sessions.kw["bind"].dispose()


def test_logout_ends_the_session_everywhere(app: FastAPI, ann: Client) -> None:
    stolen = ann.cookies[SESSION_COOKIE]
    response = ann.post("/logout", data={"csrf_token": ann.csrf})
    assert response.status_code == 303
    with TestClient(app, follow_redirects=False) as other:
        other.cookies.set(SESSION_COOKIE, stolen)
        assert other.get("/").status_code == 303


def test_forged_or_tampered_session_cookie_is_refused(app: FastAPI, ann: Client) -> None:
    cookie = ann.cookies[SESSION_COOKIE]
    with TestClient(app, follow_redirects=False) as other:
        for value in (cookie[:-2] + "xx", "e30.garbage.sig", ""):
            other.cookies.set(SESSION_COOKIE, value)
            assert other.get("/").status_code == 303


def test_deactivated_user_is_signed_out(app: FastAPI, ann: Client, ada: Client) -> None:
    with app.state.review.sessions() as session:
        ann_id = session.scalars(select(User.id).where(User.name == "ann")).one()
    response = ada.post(f"/admin/users/{ann_id}", data={"csrf_token": ada.csrf, "action": "deactivate"})
    assert response.status_code == 303 and "User updated." in ada.get(response.headers["location"]).text
    assert ann.get("/").status_code == 303


def test_annotators_cannot_use_admin_pages(ann: Client) -> None:
    assert ann.get("/admin").status_code == 403
    assert ann.get("/admin/export").status_code == 403
    response = ann.post(
        "/admin/users",
        data={
            "csrf_token": ann.csrf,
            "name": "eve",
            "role": "admin",
            "password": "eve-password",
        },
    )
    assert response.status_code == 403


def test_admin_adds_a_user_who_can_log_in(app: FastAPI, ada: Client) -> None:
    response = ada.post(
        "/admin/users",
        data={
            "csrf_token": ada.csrf,
            "name": "cleo",
            "role": "annotator",
            "password": "cleo-password",
        },
    )
    assert response.status_code == 303 and "User added." in ada.get(response.headers["location"]).text
    short = ada.post(
        "/admin/users",
        data={
            "csrf_token": ada.csrf,
            "name": "dan",
            "role": "annotator",
            "password": "short",
        },
    )
    assert short.status_code == 400 and "at least 8 characters" in short.text
    with app.state.review.sessions() as session:
        stored = session.scalars(select(User).where(User.name == "cleo")).one()
        assert stored.password_hash.startswith("$argon2id$") and "cleo-password" not in stored.password_hash
        assert verify_password(stored.password_hash, "cleo-password", FAST_HASHER)
    with TestClient(app, follow_redirects=False) as client:
        login(client, "cleo", "cleo-password")


# -- CSRF ---------------------------------------------------------------------------------------------------

POSTS = [
    ("/segments/1/comments", {"text": "a comment"}),
    ("/segments/1/discard", {"reason": "incomplete_context", "note": "x"}),
    ("/rows/2", {"base_version": "1", "action": "save", "f-tone_of_voice": "changed"}),
    ("/rows/2/review", {"base_version": "1", "reviewed": "1"}),
    ("/logout", {}),
]


@pytest.mark.parametrize(("path", "fields"), POSTS, ids=[p for p, _ in POSTS])
def test_csrf_missing_or_wrong_is_rejected(
    app: FastAPI, ann: Client, ben: Client, path: str, fields: dict[str, str]
) -> None:
    for token in (None, "", "wrong-token", ben.csrf):
        data = dict(fields) if token is None else {**fields, "csrf_token": token}
        response = ann.post(path, data=data)
        assert response.status_code == 403, (path, token)
        assert "Form refused" in response.text
    with app.state.review.sessions() as session:
        row = session.get(RowRecord, 2)
        segment = session.get(Segment, 1)
        assert row is not None and segment is not None
        assert row.version == 1 and not row.reviewed and not segment.discarded
    assert ann.get("/").status_code == 200  # still signed in: nothing was done


def test_every_form_carries_the_csrf_token(ada: Client) -> None:
    for path in ("/", "/segments/1", "/rows/2", "/admin", "/rows/2/history"):
        html = ada.get(path).text
        for form in re.findall(r"<form[^>]*method=\"post\"[^>]*>(.*?)</form>", html, flags=re.S):
            assert f'name="csrf_token" value="{ada.csrf}"' in form, path


# -- cookies, headers, secrets -----------------------------------------------------------------------------


def _set_cookie(response: Response, name: str) -> str:
    headers: list[str] = response.headers.get_list("set-cookie")
    return next(h for h in headers if h.startswith(f"{name}="))


def test_session_cookie_flags_follow_https(app: FastAPI) -> None:
    for base, secure in (("http://testserver", False), ("https://testserver", True)):
        with TestClient(app, base_url=base, follow_redirects=False) as client:
            token = csrf_of(client.get("/login").text)
            response = client.post("/login", data={"name": "ann", "password": PASSWORD, "csrf_token": token})
            cookie = _set_cookie(response, SESSION_COOKIE).lower()
            assert "httponly" in cookie and "samesite=lax" in cookie
            assert ("; secure" in cookie) is secure


def test_secure_cookies_can_be_forced(db_url: str, workdir: Path) -> None:
    app = create_app(settings_for(db_url, workdir, secure_cookies="always"))
    with TestClient(app, follow_redirects=False) as client:
        assert "; secure" in _set_cookie(client.get("/login"), "rb_login").lower()
    app.state.review.sessions.kw["bind"].dispose()


def test_security_headers(ann: Client) -> None:
    headers = ann.get("/").headers
    assert "default-src 'none'" in headers["content-security-policy"]
    assert "script-src" not in headers["content-security-policy"]  # no scripts at all
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"


def test_login_redirect_stays_on_the_site(anon: TestClient) -> None:
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        page = anon.get("/login")
        response = anon.post(
            "/login",
            data={"name": "ann", "password": PASSWORD, "next": target, "csrf_token": csrf_of(page.text)},
        )
        assert response.headers["location"] == "/"


def test_no_secrets_in_pages(app: FastAPI, ada: Client) -> None:
    with app.state.review.sessions() as session:
        secret = session.get(Meta, "secret_key")
        hashes = list(session.scalars(select(User.password_hash)))
    assert secret is not None
    for path in (
        "/",
        "/segments",
        "/segments/1",
        "/rows/2",
        "/rows/2/history",
        "/admin",
        "/ratings",
        "/login",
    ):
        html = ada.get(path).text
        assert secret.value not in html and PASSWORD not in html, path
        assert not any(h in html for h in hashes), path
        assert "$argon2" not in html


class CountingHasher(PasswordHasher):
    """FAST_HASHER's parameters; counts the password checks and how many ran at once (each takes 50 ms)."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.checks = 0
        self.running = 0
        self.most = 0
        self._guard = threading.Lock()

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        with self._guard:
            self.checks += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.05)
            return super().verify(hash, password)
        finally:
            with self._guard:
                self.running -= 1


def test_logins_sent_at_once_get_no_more_password_checks_than_the_limit(db_url: str, workdir: Path) -> None:
    hasher = CountingHasher()
    app = create_app(settings_for(db_url, workdir, login_max_failures=5, login_window_sec=60))
    app.state.review.settings = dataclasses.replace(app.state.review.settings, hasher=hasher)
    with TestClient(app) as client:  # a real user to try, and a login token to send with every attempt
        token = csrf_of(client.get("/login").text)
        cookies = dict(client.cookies)

    async def attempts() -> list[int]:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(
            transport=transport, base_url="http://testserver", cookies=cookies
        ) as http:
            form = {"name": "ann", "password": "wrong-password", "csrf_token": token}
            sent = [http.post("/login", data=form) for _ in range(40)]
            return [r.status_code for r in await asyncio.gather(*sent)]

    codes = asyncio.run(attempts())
    assert hasher.checks == 5 and codes.count(401) == 5 and codes.count(429) == 35
    assert hasher.most <= app.state.review.settings.login_hash_concurrency
    app.state.review.sessions.kw["bind"].dispose()


def test_right_passwords_are_not_counted_against_the_limit(db_url: str, workdir: Path) -> None:
    app = create_app(settings_for(db_url, workdir, login_max_failures=2, login_window_sec=60))
    with TestClient(app, follow_redirects=False) as client:
        for _ in range(4):  # each attempt is counted before its check and taken back when it was right
            login(client, "ann")
    app.state.review.sessions.kw["bind"].dispose()
