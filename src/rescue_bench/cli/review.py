"""CLI commands: ``rescue-bench review ...``, the verification web app and its store."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rescue_bench.errors import ConfigError, DependencyError
from rescue_bench.printable import echo, printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

review_app = typer.Typer(
    name="review",
    help="The verification web app: annotators review, correct and discard drafts; export verified data.",
    no_args_is_help=True,
)

_DB_HELP = "Database URL: sqlite:///FILE or postgresql://USER@HOST/DB (default sqlite:///review.db)."
DbOption = Annotated[
    str | None, typer.Option("--db", envvar="RESCUE_BENCH_REVIEW_DB", help=_DB_HELP, show_envvar=True)
]


def _require() -> None:
    """Fail with the extra to install when the review app's dependencies are missing."""
    needed = ("fastapi", "uvicorn", "sqlalchemy", "alembic", "argon2", "itsdangerous", "python_multipart")
    for module in needed:
        try:
            __import__(module)
        except ImportError:
            raise DependencyError.missing(module, "review") from None


def _store(db: str | None) -> sessionmaker[Session]:
    from rescue_bench.review.db import DEFAULT_DB_URL, open_store

    return open_store(db or DEFAULT_DB_URL, notice=_warn)


def _warn(text: str) -> None:
    echo(f"warning: {printable(text)}", err=True)


@review_app.command("init")
def init(db: DbOption = None) -> None:
    """Create or upgrade the review database (the other commands do this on their own too)."""
    _require()
    _store(db)
    echo("review database is up to date")


@review_app.command("serve")
def serve(
    workdir: Annotated[Path, typer.Option("--workdir", help="Annotation work directory: the media root.")],
    db: DbOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8000,
    secure_cookies: Annotated[
        bool,
        typer.Option("--secure-cookies", help="Always set the Secure cookie flag (behind an HTTPS proxy)."),
    ] = False,
    trust_proxy: Annotated[
        bool,
        typer.Option(
            "--trust-proxy",
            help="A reverse proxy on this host forwards the requests: believe its X-Forwarded-For and "
            "X-Forwarded-Proto (from 127.0.0.1/::1 only). Without it the peer address is used.",
        ),
    ] = False,
) -> None:
    """Serve the review app."""
    _require()
    if not workdir.is_dir():
        raise ConfigError(f"--workdir {workdir}: not a directory")
    _store(db)
    import uvicorn

    from rescue_bench.review.app import create_app
    from rescue_bench.review.db import DEFAULT_DB_URL
    from rescue_bench.review.serve import server_config
    from rescue_bench.review.settings import ReviewSettings

    settings = ReviewSettings(
        db_url=db or DEFAULT_DB_URL,
        media_root=workdir.resolve(),
        secure_cookies="always" if secure_cookies else "auto",
    )
    if not _is_loopback(host):
        echo(
            f"warning: listening on {host}: anyone who can reach it sees the login page. Serve it over HTTPS "
            "(a reverse proxy) and pass --secure-cookies.",
            err=True,
        )
    uvicorn.Server(server_config(create_app(settings), host=host, port=port, trust_proxy=trust_proxy)).run()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@review_app.command("load")
def load(
    source: Annotated[Path, typer.Argument(help="A work directory (manifests + drafts) or release JSONL.")],
    db: DbOption = None,
) -> None:
    """Import segments; segments already in the store are kept as they are."""
    _require()
    from rescue_bench.review.loader import load_work

    if not source.exists():
        raise ConfigError(f"{source}: no such file or directory")
    with _store(db)() as session:
        result = load_work(session, source)
    for warning in result.warnings:
        echo(f"warning: {printable(warning)}", err=True)
    echo(
        f"loaded {len(result.added)} segment(s), {result.rows} row(s); "
        f"{len(result.skipped)} already in the store (kept)"
    )


@review_app.command("add-user")
def add_user(
    name: Annotated[str, typer.Argument(help="Login name.")],
    role: Annotated[str, typer.Option("--role", help="annotator or admin")],
    password_env: Annotated[
        str | None,
        typer.Option("--password-env", metavar="VAR", help="Read the password from this variable."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Create a user; the password is asked for (not echoed) unless --password-env names a variable."""
    _require()
    from argon2 import PasswordHasher

    from rescue_bench.review.auth import check_new_user, create_user

    if password_env:
        password = os.environ.get(password_env)
        if password is None:
            raise ConfigError(f"environment variable {password_env} is not set")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    check_new_user(name, role, password)
    with _store(db)() as session:
        create_user(session, name, role, password, PasswordHasher())
    echo(f"added {role} {name}")


@review_app.command("export")
def export(
    out: Annotated[Path, typer.Option("--out", help="Where to write the release-format JSONL.")],
    db: DbOption = None,
) -> None:
    """Write the verified segments (every row reviewed, not discarded) as release JSONL, validated."""
    _require()
    from rescue_bench.review.export import export_jsonl

    if out.is_dir():
        raise ConfigError(f"--out {out}: is a directory; name the JSONL file to write")
    with _store(db)() as session:
        result = export_jsonl(session, out)
    echo(
        f"wrote {result.samples} verified segment(s), {result.rows} row(s) to {out}; left out: "
        f"{result.unverified} not fully reviewed, {result.discarded} discarded"
    )


@review_app.command("load-ratings")
def load_ratings(
    run: Annotated[Path, typer.Argument(help="A run directory with predictions.jsonl.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Predictions to sample per task (ER and VP).")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the sample.")] = 0,
    db: DbOption = None,
) -> None:
    """Sample ER/VP predictions of a run for the judge-calibration ratings."""
    _require()
    from rescue_bench.review.ratings import load_ratings as load

    with _store(db)() as session:
        result = load(session, run, n, seed)
    added = ", ".join(f"{task} {count} of {result.available[task]}" for task, count in result.added.items())
    echo(
        f"added rating items: {added}; {result.already_loaded} loaded before; "
        f"{result.invalid_skipped} prediction(s) not sampled (invalid, or no judge score to calibrate)"
    )


@review_app.command("export-ratings")
def export_ratings(
    out: Annotated[Path, typer.Option("--out", help="Where to write the CSV.")] = Path("ratings.csv"),
    run: Annotated[
        Path | None, typer.Option("--run", help="Only items loaded from this run directory.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the ratings as CSV (item_id,instance_id,task,annotator,human_score) for `judge calibrate`."""
    _require()
    from rescue_bench.review.ratings import write_ratings_csv

    if out.is_dir():
        raise ConfigError(f"--out {out}: is a directory; name the CSV file to write")
    with _store(db)() as session:
        count = write_ratings_csv(session, out, run)
    echo(f"wrote {count} rating(s) to {out}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.add_typer(review_app, name="review")
