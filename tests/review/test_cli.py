"""`rescue-bench review ...` commands end to end (no server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from review_helpers import review_all
from review_workdir import write_workdir
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.cli.review import _is_loopback
from rescue_bench.data.load import read_source
from rescue_bench.review.db import open_store

runner = CliRunner()


def _run(*args: str, env: dict[str, str] | None = None, input: str | None = None):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["review", *args], env=env, input=input)


def test_full_cycle(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'review.db'}"
    work = write_workdir(tmp_path / "work")
    assert _run("init", "--db", db).exit_code == 0
    env = {"REVIEW_PW": "a long enough password"}
    added = _run("add-user", "ada", "--role", "admin", "--password-env", "REVIEW_PW", "--db", db, env=env)
    assert added.exit_code == 0 and "added admin ada" in added.output
    assert "a long enough password" not in added.output
    loaded = _run("load", str(work), "--db", db)
    assert loaded.exit_code == 0 and "loaded 2 segment(s), 7 row(s); 0 already in the store" in loaded.output
    assert (
        "loaded 0 segment(s), 0 row(s); 2 already in the store (kept)"
        in _run("load", str(work), "--db", db).output
    )

    nothing = _run("export", "--out", str(tmp_path / "v.jsonl"), "--db", db)
    assert nothing.exit_code == 1 and nothing.output.startswith("error: nothing to export")

    sessions = open_store(db)
    with sessions() as session:
        review_all(session)
    sessions.kw["bind"].dispose()
    done = _run("export", "--out", str(tmp_path / "v.jsonl"), "--db", db)
    assert done.exit_code == 0 and "wrote 2 resolved segment(s), 7 row(s)" in done.output
    assert read_source(tmp_path / "v.jsonl").errors == ()


def test_add_user_prompts_without_echo_and_checks_input(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'review.db'}"
    prompted = _run(
        "add-user", "ann", "--role", "annotator", "--db", db, input="secret pass 1\nsecret pass 1\n"
    )
    assert prompted.exit_code == 0 and "secret pass 1" not in prompted.output
    again = _run(
        "add-user",
        "ann",
        "--role",
        "annotator",
        "--password-env",
        "PW",
        "--db",
        db,
        env={"PW": "another password"},
    )
    assert again.exit_code == 2 and "error: user 'ann' already exists" in again.output
    missing = _run("add-user", "bob", "--role", "annotator", "--password-env", "NOT_SET_ANYWHERE", "--db", db)
    assert missing.exit_code == 2 and "NOT_SET_ANYWHERE is not set" in missing.output
    short = _run(
        "add-user", "bob", "--role", "annotator", "--password-env", "PW", "--db", db, env={"PW": "short"}
    )
    assert short.exit_code == 2 and "at least 8 characters" in short.output
    role = _run(
        "add-user", "bob", "--role", "owner", "--password-env", "PW", "--db", db, env={"PW": "long enough!"}
    )
    assert role.exit_code == 2 and "role must be one of annotator, adjudicator, admin" in role.output


def test_ratings_commands(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'review.db'}"
    run = tmp_path / "run"
    run.mkdir()
    lines = [
        {
            "instance_id": f"s::er::{i}",
            "task": "er",
            "valid": True,
            "gold": {"emotion": "calm", "intensity": 2},
            "prediction": {"emotion": "calm", "intensity": 3},
        }
        for i in range(1, 4)
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    never_judged = _run("load-ratings", str(run), "--n", "2", "--db", db)
    assert (
        never_judged.exit_code == 1
        and f"error: {run}: no judge verdicts in judgments.jsonl" in never_judged.output
    )
    verdicts = [
        {
            "instance_id": x["instance_id"],
            "task": "er",
            "judge": "x/j",
            "valid": True,
            "scores": {"s_emo": 3.0},
        }
        for x in lines
    ]
    (run / "judgments.jsonl").write_text("".join(json.dumps(x) + "\n" for x in verdicts))
    loaded = _run("load-ratings", str(run), "--n", "2", "--db", db)
    assert loaded.exit_code == 0 and "er 2 of 3, vp 0 of 0" in loaded.output
    out = tmp_path / "ratings.csv"
    exported = _run("export-ratings", "--out", str(out), "--db", db)
    assert exported.exit_code == 0 and "wrote 0 rating(s)" in exported.output
    assert out.read_text().splitlines() == ["item_id,instance_id,task,annotator,human_score"]
    bad = _run("load-ratings", str(tmp_path / "nope"), "--db", db)
    assert bad.exit_code == 1 and "predictions.jsonl: not found" in bad.output


def test_usage_errors(tmp_path: Path) -> None:
    serve = _run("serve", "--workdir", str(tmp_path / "missing"))
    assert serve.exit_code == 2 and "not a directory" in serve.output
    load = _run("load", str(tmp_path / "missing"), "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert load.exit_code == 2 and "no such file or directory" in load.output
    bad_db = _run("init", "--db", "mysql://root:hunter2@db/review")
    assert bad_db.exit_code == 2 and "hunter2" not in bad_db.output


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.5", False),
        ("example", False),
    ],
)
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert _is_loopback(host) is loopback


def test_bad_paths_are_one_line_errors(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'review.db'}"
    assert _run("init", "--db", db).exit_code == 0
    into_dir = _run("export", "--out", str(tmp_path), "--db", db)
    assert into_dir.exit_code == 2 and "is a directory" in into_dir.output
    assert into_dir.exception is None or isinstance(into_dir.exception, SystemExit)
    (tmp_path / "notes.txt").write_text("not a database, just text\n" * 200)
    not_db = _run("init", "--db", f"sqlite:///{tmp_path / 'notes.txt'}")
    assert not_db.exit_code == 2 and isinstance(not_db.exception, SystemExit)
    assert (
        not_db.output.startswith("error: cannot open the review database")
        and "not a database" in not_db.output
    )
    assert len(not_db.output.strip().splitlines()) == 1
    ratings_dir = _run("export-ratings", "--out", str(tmp_path), "--db", db)
    assert ratings_dir.exit_code == 2 and "is a directory" in ratings_dir.output


def test_load_errors_say_error_once(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "s1", "scenario": "couple", "rows": "nope"}\n')
    result = _run("load", str(bad), "--db", f"sqlite:///{tmp_path / 'review.db'}")
    assert result.exit_code == 1 and result.output.startswith("error: ")
    assert "error: error:" not in result.output and str(bad) in result.output
