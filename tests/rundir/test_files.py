"""No file the tool writes or truncates in a run directory is reached through a link (issue 42, failure 2).

A run directory received from someone else can hold ``judgments.jsonl -> ~/notes.txt``: writing through it
would cut the target's last line and append records to it. Every writer of every record file refuses such a
link (or a hard link, or a FIFO) in one line naming it, and leaves the target as it was; an unterminated tail
that is not a record of this tool is refused, never cut.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import RunDirError, RunStore, files
from rescue_bench.rundir.files import (
    LOCK_FILE,
    RECORD_FILES,
    WRITTEN_FILES,
    JsonlAppender,
    atomic_write_json,
    atomic_write_lines,
    cut_torn_tail,
    jsonl_line,
    rejected_path,
    set_aside,
)

runner = CliRunner()
RUN = ("run", "--model", "baseline/random", "--data", "demo", "--tasks", "itp", "--quiet")
# The user's file a hostile run directory points at: an unterminated last line, as notes often end.
PRECIOUS = b"line one of my notes\nmy last line, unterminated"


def _writers() -> dict[str, Callable[[Path], Any]]:
    """Every way the rundir module writes or truncates a file, by name."""
    return {
        "JsonlAppender": lambda path: JsonlAppender(path).append([{"a": 1}]),
        "atomic_write_json": lambda path: atomic_write_json(path, {"a": 1}),
        "atomic_write_lines": lambda path: atomic_write_lines(path, [jsonl_line({"a": 1})]),
        "cut_torn_tail": cut_torn_tail,
        "set_aside": lambda path: set_aside(path.with_name(path.name.replace(".rejected", "")), [b"{}\n"]),
    }


def _target_of(writer: str, run: Path, name: str) -> Path:
    path = run / name
    return rejected_path(path) if writer == "set_aside" else path


@pytest.mark.parametrize("name", [*RECORD_FILES, files.BATCH_EXPORT_FILE])
@pytest.mark.parametrize("writer", list(_writers()))
def test_no_writer_follows_a_symlink_for_any_record_file(tmp_path: Path, writer: str, name: str) -> None:
    run, precious = tmp_path / "run", tmp_path / "mine.txt"
    run.mkdir()
    precious.write_bytes(PRECIOUS)
    link = _target_of(writer, run, name)
    link.symlink_to(precious)
    with pytest.raises(RunDirError) as raised:
        _writers()[writer](link)
    message = str(raised.value)
    assert "\n" not in message and str(link) in message and "symbolic link" in message
    assert precious.read_bytes() == PRECIOUS and link.is_symlink()


@pytest.mark.parametrize("name", RECORD_FILES)
def test_a_dangling_link_and_a_hard_link_are_refused_too(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to(tmp_path / "would-be-created.txt")
    with pytest.raises(RunDirError, match="symbolic link"):
        JsonlAppender(run / name)
    assert not (tmp_path / "would-be-created.txt").exists()
    (run / name).unlink()
    precious = tmp_path / "mine.txt"
    precious.write_bytes(PRECIOUS)
    os.link(precious, run / name)
    with pytest.raises(RunDirError, match="2 hard links"):
        atomic_write_json(run / name, {"a": 1})
    assert precious.read_bytes() == PRECIOUS


def test_a_planted_temporary_is_never_written_through(tmp_path: Path) -> None:
    precious = tmp_path / "mine.txt"
    precious.write_bytes(PRECIOUS)
    (tmp_path / ".run.json.tmp").symlink_to(precious)
    atomic_write_json(tmp_path / "run.json", {"a": 1})
    assert precious.read_bytes() == PRECIOUS
    assert (tmp_path / "run.json").read_text() == '{\n  "a": 1\n}\n'


@pytest.mark.parametrize("name", [LOCK_FILE, *WRITTEN_FILES])
def test_taking_the_lock_names_a_linked_file_before_anything_reads_it(tmp_path: Path, name: str) -> None:
    """Every writer takes the run's lock first, so a planted link is named before any read or write."""
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RunDirError, match=f"{name}: is a symbolic link"):
        RunStore(run).lock()
    assert not (tmp_path / "elsewhere").exists()


def test_a_tail_that_is_no_record_is_refused_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b'{"a": 1}\nnot a record of ours')
    with pytest.raises(RunDirError, match=r"predictions.jsonl: its last line is unterminated and is not"):
        cut_torn_tail(path)
    assert path.read_bytes() == b'{"a": 1}\nnot a record of ours'
    path.write_bytes(b'{"a": 1}\n{"b": ')  # a torn record of ours is still cut
    cut_torn_tail(path)
    assert path.read_bytes() == b'{"a": 1}\n'


@pytest.mark.parametrize("name", ["predictions.jsonl", "requests.jsonl", "run.json"])
def test_run_refuses_a_linked_record_file_in_one_line(tmp_path: Path, name: str) -> None:
    out, precious = tmp_path / "run", tmp_path / "mine.txt"
    assert runner.invoke(app, [*RUN, "--out", str(out)]).exit_code == 0
    precious.write_bytes(PRECIOUS)
    (out / name).unlink()
    (out / name).symlink_to(precious)
    result = runner.invoke(app, [*RUN, "--out", str(out)])
    assert result.exit_code != 0
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and name in errors[0] and "symbolic link" in errors[0], result.output
    assert precious.read_bytes() == PRECIOUS


def test_score_refuses_a_linked_judgments_file(tmp_path: Path) -> None:
    out, precious = tmp_path / "run", tmp_path / "mine.txt"
    made = runner.invoke(app, ["run", "--model", "baseline/random", "--data", "demo", "--tasks", "er",
                               "--quiet", "--out", str(out)])  # fmt: skip
    assert made.exit_code == 0, made.output
    precious.write_bytes(PRECIOUS)
    (out / "judgments.jsonl").symlink_to(precious)
    result = runner.invoke(app, ["score", str(out), "--bertscore-model", "none"])
    assert result.exit_code != 0 and "judgments.jsonl: is a symbolic link" in result.output, result.output
    assert precious.read_bytes() == PRECIOUS


def test_report_refuses_a_linked_report_file(tmp_path: Path) -> None:
    out, precious = tmp_path / "run", tmp_path / "mine.txt"
    assert runner.invoke(app, [*RUN, "--out", str(out)]).exit_code == 0
    precious.write_bytes(PRECIOUS)
    (out / "report").mkdir()
    (out / "report" / "report.md").symlink_to(precious)
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 1 and "report.md: is a symbolic link" in result.output, result.output
    assert precious.read_bytes() == PRECIOUS
