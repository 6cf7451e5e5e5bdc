"""Fixtures of the review-app tests: a fictional work directory, a database (SQLite, and PostgreSQL when its
binaries are present), the app, and signed-in clients.

PostgreSQL: the session fixture starts a throwaway server (initdb + pg_ctl on a free loopback port, in a temp
dir; as root the binaries run as the ``postgres`` OS user) and stops it at the end. Each test gets a fresh
database on it. ``RESCUE_BENCH_TEST_PG_URL`` points the tests at an existing server instead (a URL whose user
may create databases).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the review extra is not installed: pip install 'rescue-bench[review]'")

from fastapi import FastAPI
from fastapi.testclient import TestClient

from rescue_bench.review.app import create_app
from rescue_bench.review.auth import create_user
from rescue_bench.review.db import open_store
from rescue_bench.review.loader import load_work

sys.path.insert(0, str(Path(__file__).parent))
from review_helpers import FAST_HASHER, PASSWORD, Client, login, settings_for
from review_workdir import write_workdir

USERS = {"ada": "admin", "ann": "annotator", "ben": "annotator"}


# -- PostgreSQL --------------------------------------------------------------------------------------------


def _pg_bindir() -> Path | None:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and (Path(found).parent / "initdb").exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server URL for the session (user ``postgres``, trust auth on loopback only)."""
    given = os.environ.get("RESCUE_BENCH_TEST_PG_URL")
    if given:
        yield given
        return
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL binaries not found (apt-get install postgresql, or set RESCUE_BENCH_TEST_PG_URL)"
        )
    as_postgres: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="rb-review-pg-"))
    if os.geteuid() == 0:  # postgres refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as the postgres user")
        shutil.chown(base, user="postgres", group="postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    data, port = base / "data", _free_port()
    run = subprocess.run
    run(
        [
            *as_postgres,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ],
        check=True,
        capture_output=True,
    )
    options = (
        f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off"
    )
    started = run(
        [
            *as_postgres,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(base / "log"),
            "-w",
            "-t",
            "30",
            "start",
        ],
        capture_output=True,
        text=True,
    )
    if started.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {started.stderr or started.stdout}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(
            [*as_postgres, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)


def _pg_database(server: str) -> tuple[str, Callable[[], None]]:
    import psycopg

    name = f"rb_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return server.rsplit("/", 1)[0] + f"/{name}", drop


def _populate(url: str, workdir: Path) -> None:
    """Migrate, add the test users and load the fictional work directory."""
    sessions = open_store(url)
    with sessions() as session:
        for name, role in USERS.items():
            create_user(session, name, role, PASSWORD, FAST_HASHER)
        load_work(session, workdir)
    sessions.kw["bind"].dispose()


@pytest.fixture(scope="session")
def template_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_workdir(tmp_path_factory.mktemp("template") / "work")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory, template_workdir: Path) -> Path:
    """A populated SQLite file, copied for each test (migrating once keeps the tests fast)."""
    path = tmp_path_factory.mktemp("template-db") / "review.db"
    _populate(f"sqlite:///{path}", template_workdir)
    return path


@pytest.fixture(scope="session")
def pg_shared(pg_server: str) -> Iterator[str]:
    """One migrated PostgreSQL database, emptied and refilled for each test (faster than CREATE DATABASE)."""
    url, drop = _pg_database(pg_server)
    open_store(url).kw["bind"].dispose()
    yield url
    drop()


def _refill(url: str, workdir: Path) -> None:
    from sqlalchemy import create_engine, text

    from rescue_bench.review.db import Base, normalize_url

    engine = create_engine(normalize_url(url))
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()
    _populate(url, workdir)


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database with the test users and the fictional work loaded (SQLite file or PostgreSQL)."""
    if request.param == "sqlite":
        path = tmp_path / "review.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("pg_shared")
    _refill(url, request.getfixturevalue("template_workdir"))
    yield url


@pytest.fixture(params=BACKENDS)
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database (not even migrated)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    url, drop = _pg_database(request.getfixturevalue("pg_server"))
    try:
        yield url
    finally:
        drop()


# -- work, app and clients ---------------------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return write_workdir(tmp_path / "work")


@pytest.fixture
def app(db_url: str, workdir: Path) -> Iterator[FastAPI]:
    application = create_app(settings_for(db_url, workdir))
    yield application
    application.state.review.sessions.kw["bind"].dispose()


@pytest.fixture
def anon(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as client:
        yield client


@pytest.fixture
def ann(app: FastAPI) -> Iterator[Client]:
    """Annotator ``ann``, signed in; her CSRF token is ``client.csrf``."""
    with Client(app, follow_redirects=False) as client:
        client.csrf = login(client, "ann")
        yield client


@pytest.fixture
def ben(app: FastAPI) -> Iterator[Client]:
    with Client(app, follow_redirects=False) as client:
        client.csrf = login(client, "ben")
        yield client


@pytest.fixture
def ada(app: FastAPI) -> Iterator[Client]:
    """Admin ``ada``, signed in."""
    with Client(app, follow_redirects=False) as client:
        client.csrf = login(client, "ada")
        yield client
