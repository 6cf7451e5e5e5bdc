"""What an adversarial test of the review app broke (issue 13), each case checked here.

* the database file holds the cookie-signing secret: it is owner-only, and an exposed one is tightened and
  its secret replaced;
* malformed numbers in paths and forms are a 4xx page, never a 500;
* failed logins from one address do not lock the owner out from another;
* ``X-Forwarded-For`` is believed only with ``--trust-proxy`` (checked over real HTTP under uvicorn);
* an oversized form says what was too large and gives the text back.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from review_helpers import PASSWORD, Client, csrf_of, form_fields, login, post_form, replace, settings_for
from sqlalchemy import select
from tests.fakes.live_server import served

from rescue_bench.errors import ConfigError
from rescue_bench.hosts import allowed_host
from rescue_bench.review.app import create_app
from rescue_bench.review.auth import SESSION_COOKIE
from rescue_bench.review.db import Comment, Meta, RowRecord, open_store, secret_key
from rescue_bench.review.serve import server_config
from rescue_bench.review.settings import host_names

if TYPE_CHECKING:
    import uvicorn


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- 1. the secret is owner-only -----------------------------------------------------------------------------


def test_new_database_and_its_companions_are_owner_only(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)  # the usual umask, which would make a plain new file 0644
    path = tmp_path / "review.db"
    app = create_app(settings_for(f"sqlite:///{path}", None))
    try:
        with TestClient(app) as client:
            assert client.get("/login").status_code == 200
        files = [p for p in tmp_path.iterdir() if p.name.startswith("review.db")]
        assert path in files and len(files) >= 2  # WAL mode: the -wal and -shm files exist while open
        assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}
    finally:
        os.umask(old_umask)
        app.state.review.sessions.kw["bind"].dispose()


def test_exposed_database_is_tightened_and_its_secret_replaced(tmp_path: Path) -> None:
    path = tmp_path / "review.db"
    url = f"sqlite:///{path}"
    first = open_store(url)
    with first() as session:
        before = secret_key(session)
    first.kw["bind"].dispose()
    os.chmod(path, 0o644)
    notices: list[str] = []
    sessions = open_store(url, notice=notices.append)
    with sessions() as session:
        after = session.scalars(select(Meta.value).where(Meta.key == "secret_key")).one()
    sessions.kw["bind"].dispose()
    assert _mode(path) == 0o600
    assert after != before and len(after) >= 48
    assert len(notices) == 1 and "was 0644" in notices[0] and str(path) in notices[0]
    quiet: list[str] = []
    open_store(url, notice=quiet.append).kw["bind"].dispose()  # already owner-only: nothing to say
    assert quiet == []


def test_database_that_cannot_be_tightened_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "review.db"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)

    def refuse(target: object, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", refuse)
    with pytest.raises(ConfigError, match=r"readable by other users \(mode 0644\).*chmod 600"):
        open_store(f"sqlite:///{path}")


def test_serve_and_every_command_tighten_an_existing_database(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    path = tmp_path / "review.db"
    assert CliRunner().invoke(app, ["review", "init", "--db", f"sqlite:///{path}"]).exit_code == 0
    assert _mode(path) == 0o600
    os.chmod(path, 0o640)
    result = CliRunner().invoke(app, ["review", "init", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 0 and "owner-only" in result.output and "was 0640" in result.output
    assert _mode(path) == 0o600


# -- 2. malformed numbers ------------------------------------------------------------------------------------

BAD_NUMBERS = ["9" * 20, "\u0661\u0662", "\u00b9", "1" * 5000, "-1", "1e3"]


@pytest.fixture
def lenient(app: FastAPI) -> Iterator[Client]:
    """``ann`` signed in, with server errors returned as responses (a 500 must show up as a status)."""
    with Client(app, follow_redirects=False, raise_server_exceptions=False) as client:
        client.csrf = login(client, "ann")
        yield client


@pytest.mark.parametrize("bad", BAD_NUMBERS)
def test_malformed_numbers_in_paths_are_404(lenient: Client, bad: str) -> None:
    for path in (f"/segments/{bad}", f"/rows/{bad}", f"/rows/{bad}/history", f"/conflicts/{bad}"):
        response = lenient.get(path)
        assert response.status_code == 404 and "There is nothing here" in response.text, path
    response = lenient.get("/segments", params={"segment": bad})
    assert response.status_code == 404
    posted = lenient.post(f"/segments/{bad}/comments", data={"csrf_token": lenient.csrf, "text": "x"})
    assert posted.status_code == 404


@pytest.mark.parametrize("bad", BAD_NUMBERS)
@pytest.mark.parametrize("field", ["row_id", "base_version", "conflict_id"])
def test_malformed_numbers_in_forms_are_400_and_change_nothing(
    app: FastAPI, lenient: Client, bad: str, field: str
) -> None:
    row = _first_row(app)
    if field == "row_id":
        url, data = f"/segments/{row.segment_pk}/comments", {"text": "hello", "row_id": bad}
    else:
        url, data = f"/rows/{row.id}", {"base_version": str(row.version), field: bad}
    response = lenient.post(url, data={"csrf_token": lenient.csrf, **data})
    assert response.status_code == 400, response.text
    assert f"The form field &#39;{field}&#39; must be a whole number" in response.text
    assert "Traceback" not in response.text
    with app.state.review.sessions() as session:
        assert session.scalars(select(Comment)).all() == []
        assert session.get(RowRecord, row.id).version == row.version  # type: ignore[union-attr]


def test_malformed_review_version_is_400(app: FastAPI, lenient: Client) -> None:
    row = _first_row(app)
    response = lenient.post(
        f"/rows/{row.id}/review", data={"csrf_token": lenient.csrf, "base_version": "9" * 20, "reviewed": "1"}
    )
    assert response.status_code == 400


def _first_row(app: FastAPI) -> RowRecord:
    with app.state.review.sessions() as session:
        return session.scalars(select(RowRecord).order_by(RowRecord.id)).first()  # type: ignore[return-value]


# -- 3. lockout per account and address ----------------------------------------------------------------------


def _try(client: TestClient, name: str, password: str) -> int:
    token = csrf_of(client.get("/login").text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token}).status_code


def test_attacker_does_not_lock_the_admin_out_from_another_address(db_url: str, workdir: Path) -> None:
    app = create_app(settings_for(db_url, workdir, login_max_failures=5, login_window_sec=300))
    try:
        with TestClient(app, follow_redirects=False, client=("203.0.113.9", 4000)) as attacker:
            assert [_try(attacker, "ada", "guess-guess") for _ in range(5)] == [401] * 5
            assert _try(attacker, "ada", PASSWORD) == 429  # this address waits, even with the right password
            assert _try(attacker, "ann", "guess-guess") == 429  # and for every account
        with TestClient(app, follow_redirects=False, client=("198.51.100.7", 5000)) as owner:
            assert _try(owner, "ada", PASSWORD) == 303
            assert SESSION_COOKIE in owner.cookies
    finally:
        app.state.review.sessions.kw["bind"].dispose()


def test_a_rebound_host_name_cannot_spend_the_login_limit(db_url: str, workdir: Path) -> None:
    """DNS rebinding: a page of evil.example, its name now pointing at 127.0.0.1, posts logins from the
    admin's own browser. Refused before the limiter counts them; the admin still signs in."""
    app = create_app(settings_for(db_url, workdir, login_max_failures=3, login_window_sec=300))
    try:
        with TestClient(app, follow_redirects=False, client=("127.0.0.1", 4000)) as browser:
            token = csrf_of(browser.get("/login").text)
            for _ in range(5):
                refused = browser.post(
                    "/login",
                    data={"name": "ada", "password": "guess-guess", "csrf_token": token},
                    headers={"Host": "evil.example:8000"},
                )
                assert refused.status_code == 421 and "ada" not in refused.text
            assert browser.get("/login", headers={"Host": "evil.example"}).status_code == 421
            assert _try(browser, "ada", PASSWORD) == 303
    finally:
        app.state.review.sessions.kw["bind"].dispose()


def test_allowed_hosts_and_port() -> None:
    names = host_names(["review.example"])
    assert allowed_host("review.example:8443", names, 8443) and allowed_host("127.0.0.1", names, 8443)
    assert not allowed_host("review.example:9", names, 8443) and not allowed_host("evil.example", names, None)


# -- 4. X-Forwarded-For only with --trust-proxy (real HTTP) --------------------------------------------------


@contextmanager
def _served(app: FastAPI, *, trust_proxy: bool) -> Iterator[str]:
    def config(port: int) -> uvicorn.Config:
        made = server_config(app, host="127.0.0.1", port=port, trust_proxy=trust_proxy)
        made.log_level = "warning"
        return made

    with served(app, config=config) as url:
        yield url


def _http_try(base: str, name: str, password: str, forwarded: str) -> int:
    with httpx.Client(base_url=base, follow_redirects=False) as client:
        token = csrf_of(client.get("/login").text)
        response = client.post(
            "/login",
            data={"name": name, "password": password, "csrf_token": token},
            headers={"X-Forwarded-For": forwarded},
        )
        return response.status_code


def test_spoofed_forwarded_for_does_not_dodge_the_limit(db_url: str, workdir: Path) -> None:
    app = create_app(settings_for(db_url, workdir, login_max_failures=3, login_window_sec=300))
    try:
        with _served(app, trust_proxy=False) as base:
            # a password sprayer: another account and another claimed address for each guess
            names = ["ann", "ben", "ada", "eve", "bob"]
            codes = [_http_try(base, name, "guess-guess", f"10.0.0.{i}") for i, name in enumerate(names)]
    finally:
        app.state.review.sessions.kw["bind"].dispose()
    assert codes == [401, 401, 401, 429, 429]


def test_trusted_proxy_passes_the_client_address(db_url: str, workdir: Path) -> None:
    app = create_app(settings_for(db_url, workdir, login_max_failures=3, login_window_sec=300))
    try:
        with _served(app, trust_proxy=True) as base:
            attacker = [_http_try(base, "ada", "guess-guess", "203.0.113.9") for _ in range(4)]
            owner = _http_try(base, "ada", PASSWORD, "198.51.100.7")
    finally:
        app.state.review.sessions.kw["bind"].dispose()
    assert attacker == [401, 401, 401, 429] and owner == 303


# -- 6. oversized forms --------------------------------------------------------------------------------------


def test_oversized_edit_says_what_was_too_large_and_keeps_the_text(app: FastAPI, ann: Client) -> None:
    row = _first_row(app)
    limit = app.state.review.settings.max_field_chars
    long_text = "I never said that. " * (limit // 10)
    fields = replace(form_fields(ann.get(f"/rows/{row.id}").text), "f-dialogue_cleaned", long_text)
    response = post_form(ann, f"/rows/{row.id}", fields)
    assert response.status_code == 413
    assert f"has {len(long_text):,} characters; the limit is {limit:,}" in response.text
    kept = dict(form_fields(response.text))  # the editor again, with the user's text in it
    assert kept["f-dialogue_cleaned"] == long_text.strip()
    with app.state.review.sessions() as session:
        assert session.get(RowRecord, row.id).version == row.version  # type: ignore[union-attr]


def test_oversized_comment_is_refused_with_the_text_given_back(app: FastAPI, ann: Client) -> None:
    row = _first_row(app)
    text = "a long thought " * 1000
    response = ann.post(f"/segments/{row.segment_pk}/comments", data={"csrf_token": ann.csrf, "text": text})
    assert response.status_code == 413
    assert f"The comment has {len(text.strip()):,} characters; the limit is 5,000." in response.text
    assert text.strip() in response.text
    with app.state.review.sessions() as session:
        assert session.scalars(select(Comment)).all() == []


def test_body_past_the_hard_limit_is_not_read(db_url: str, workdir: Path) -> None:
    app = create_app(settings_for(db_url, workdir, max_form_bytes=1000))
    try:
        with Client(app, follow_redirects=False) as client:
            client.csrf = login(client, "ann")
            row = _first_row(app)
            response = client.post(
                f"/segments/{row.segment_pk}/comments", data={"csrf_token": client.csrf, "text": "x" * 10_000}
            )
            assert response.status_code == 413 and "the limit is 1000" not in response.text
            assert "(the limit is 1.0 kB); it was not read" in response.text
    finally:
        app.state.review.sessions.kw["bind"].dispose()
