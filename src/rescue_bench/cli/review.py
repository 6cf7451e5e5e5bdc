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
def init(
    db: DbOption = None,
    reviews: Annotated[
        int | None,
        typer.Option(
            "--reviews",
            min=1,
            max=5,
            help="Independent reviews each row needs (1: one annotator reviews the shared value; 2 or 3 for "
            "double or triple annotation).",
        ),
    ] = None,
    blind: Annotated[
        bool | None,
        typer.Option(
            "--blind/--open",
            help="Whether annotators see each other's values of a row before submitting their own (default: "
            "blind when more than one review is needed).",
        ),
    ] = None,
) -> None:
    """Create or upgrade the review database (the other commands do this on their own too), and set how
    many independent reviews each row needs."""
    _require()
    from rescue_bench.review.settings import ProjectSettings, project_settings, save_project_settings

    with _store(db)() as session:
        current = project_settings(session)
        if reviews is not None or blind is not None:
            current = ProjectSettings(
                reviews if reviews is not None else current.reviews_per_row,
                blind if blind is not None else current.blind,
            )
            save_project_settings(session, current)
    mode = "blind" if current.is_blind else "open"
    echo(f"review database is up to date; {current.reviews_per_row} review(s) per row, {mode}")


@review_app.command("serve")
def serve(
    workdir: Annotated[
        list[Path],
        typer.Option(
            "--workdir",
            help="Annotation work directory: a media root. Repeat it for a dataset of several work "
            "directories; each segment's clips come from the one it was loaded from.",
        ),
    ],
    db: DbOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8000,
    secure_cookies: Annotated[
        bool,
        typer.Option("--secure-cookies", help="Always set the Secure cookie flag (behind an HTTPS proxy)."),
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="Another host name browsers use to reach the app (a proxy's public name); requests naming "
            "any other host are refused (421).",
        ),
    ] = None,
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
    for path in workdir:
        if not path.is_dir():
            raise ConfigError(f"--workdir {path}: not a directory")
    _store(db)
    import uvicorn

    from rescue_bench.review.app import create_app
    from rescue_bench.review.db import DEFAULT_DB_URL
    from rescue_bench.review.serve import server_config
    from rescue_bench.review.settings import ReviewSettings, host_names

    settings = ReviewSettings(
        db_url=db or DEFAULT_DB_URL,
        media_root=workdir[0].resolve(),
        extra_media_roots=tuple(path.resolve() for path in workdir[1:]),
        allowed_hosts=host_names([host, *(allow_host or [])]),
        port=port,
        secure_cookies="always" if secure_cookies else "auto",
    )
    if not _is_loopback(host):
        echo(
            f"warning: listening on {host}: anyone who can reach it sees the login page. Serve it over HTTPS "
            "(a reverse proxy), pass --secure-cookies, and --allow-host for each name browsers use to "
            "reach it.",
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
    role: Annotated[str, typer.Option("--role", help="annotator, adjudicator or admin")],
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
    provenance: Annotated[
        Path | None,
        typer.Option(
            "--provenance",
            help="Also write one JSON line per exported row: draft model, reviewers, adjudicator.",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Write the resolved segments (every row's reviews agree or were adjudicated; not discarded) as release
    JSONL, validated, and list what is held back and why."""
    _require()
    from rescue_bench.review.export import export_jsonl

    for option, path in (("--out", out), ("--provenance", provenance)):
        if path is not None and path.is_dir():
            raise ConfigError(f"{option} {path}: is a directory; name the JSONL file to write")
    if provenance is not None and provenance.resolve() == out.resolve():
        raise ConfigError("--provenance must name another file than --out")
    with _store(db)() as session:
        result = export_jsonl(session, out, provenance)
    for held in result.held_back:
        echo(f"held back: {printable(held.sample_id)}: {printable(held.reason)}")
    echo(
        f"wrote {result.samples} resolved segment(s), {result.rows} row(s) to {out}; held back: "
        f"{result.unverified} with unresolved rows, {result.discarded} discarded"
        + (f"; provenance in {provenance}" if provenance is not None else "")
    )


@review_app.command("import-reviews")
def import_reviews(
    file: Annotated[Path, typer.Argument(help="Release-format JSONL (or a directory of sample JSON files).")],
    user: Annotated[str, typer.Option("--user", help="Whose independent review the file is.")],
    db: DbOption = None,
) -> None:
    """Record an annotator's labels from a file as their independent review (rows matched by sample id and
    row index; nothing is imported when a row matches nothing)."""
    _require()
    from rescue_bench.review.imports import import_reviews as run_import

    with _store(db)() as session:
        result = run_import(session, file, user)
    echo(
        f"imported {result.rows} row(s) of {result.samples} sample(s) as {printable(user)}'s review "
        f"({result.changed} new or changed); {result.not_in_file} row(s) of those samples not in the file"
    )


@review_app.command("assign")
def assign(
    samples: Annotated[list[str], typer.Argument(help="Sample ids of the segments to assign.")],
    user: Annotated[str, typer.Option("--user", help="The annotator who gets them.")],
    db: DbOption = None,
) -> None:
    """Assign segments to an annotator: an assigned segment is in the queues of its assignees only."""
    _require()
    from sqlalchemy import select

    from rescue_bench.review.db import Segment, user_by_name
    from rescue_bench.review.reviews import assign as run_assign

    with _store(db)() as session:
        found = user_by_name(session, user)
        if found is None:
            raise ConfigError(f"no user {user!r}; add one with `rescue-bench review add-user`")
        segments = list(session.scalars(select(Segment).where(Segment.sample_id.in_(samples))))
        missing = sorted(set(samples) - {s.sample_id for s in segments})
        if missing:
            raise ConfigError(
                f"no such sample in the review store: {', '.join(printable(m) for m in missing)}"
            )
        added = run_assign(session, segments, found)
    echo(f"assigned {added} segment(s) to {printable(user)} ({len(segments) - added} already theirs)")


@review_app.command("agreement")
def agreement(
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    db: DbOption = None,
) -> None:
    """Agreement of the independent reviews per dimension: units, raters, Krippendorff's alpha and pairwise
    Cohen's kappa; each dimension's line says how its units are formed (row, row x person, or one yes/no
    unit per candidate)."""
    _require()
    import json

    from rescue_bench.review.agreement import agreement as measure

    with _store(db)() as session:
        results = measure(session)
    if as_json:
        echo(json.dumps({"dimensions": [r.to_json() for r in results]}, indent=2))
        return
    echo(f"{'dimension':<17} {'level':<8} {'units':>6} {'raters':>6} {'alpha':>7}  pairwise kappa")
    for r in results:
        kappas = ", ".join(f"{a}/{b} {_fmt(p.kappa)} (n={p.units})" for p in r.pairs for a, b in [p.raters])
        echo(
            f"{r.dimension:<17} {r.level:<8} {r.units:>6} {r.raters:>6} {_fmt(r.alpha):>7}  "
            f"{printable(kappas) or '-'}"
        )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


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
