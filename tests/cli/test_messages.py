"""Errors in the user's words: the flag or the spec file's key the user wrote, a conflicting pair refused in
one line, and a path that is not a run directory said for what it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app

runner = CliRunner()


def error(*args: str) -> str:
    """The one line a usage mistake prints (exit code 2, nothing written)."""
    result: Any = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return str(lines[0])


def test_run_alone_names_the_model_flag() -> None:
    assert error("run") == "error: --model is required"


def test_a_spec_file_without_a_model_names_its_key_and_the_flag(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('data = "demo"\n')
    assert (
        error("run", "--spec", str(spec))
        == f"error: --spec {spec}: model: missing (give it in the file, or --model)"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (("--price-in", "1"), "--price-in and --price-out go together: give both"),
        (("--price-out", "2"), "--price-in and --price-out go together: give both"),
        (
            ("--prices", "p.json", "--price-in", "1", "--price-out", "2"),
            "give either --prices or --price-in and --price-out, not both",
        ),
        (
            ("--no-bertscore", "--bertscore-model", "X"),
            "--bertscore-model 'X' asks for BERTScore and --no-bertscore turns it off: give one of them",
        ),
    ],
)
def test_a_pair_of_flags_is_named_as_written(given: tuple[str, ...], expected: str) -> None:
    assert error("run", "--model", "baseline/random", *given, "--print-spec") == f"error: {expected}"


def test_thinking_off_and_a_reasoning_effort_are_refused_in_one_line_naming_both_flags() -> None:
    line = error("run", "--model", "openai/gpt-4o", "--disable-thinking", "--reasoning-effort", "high")
    assert line == "error: --reasoning-effort 'high': contradicts --disable-thinking (give one of them)"


def test_a_spec_files_pair_is_named_by_its_keys(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[model]\nname = "baseline/random"\n\n[budget]\nprice_in = 1.0\n')
    assert error("run", "--spec", str(spec)) == (
        f"error: --spec {spec}: budget: price_in and price_out go together: give both"
    )
    spec.write_text('[model]\nname = "openai/gpt-4o"\nreasoning_effort = "high"\ndisable_thinking = true\n')
    assert error("run", "--spec", str(spec)) == (
        f"error: --spec {spec}: model: reasoning_effort 'high': contradicts disable_thinking "
        "(give one of them)"
    )


def _runs(root: Path) -> Path:
    for name in ("a", "b"):
        (root / "runs" / name).mkdir(parents=True)
        (root / "runs" / name / "predictions.jsonl").write_text("")
    return root / "runs"


def test_report_of_a_folder_of_runs_says_so_and_names_a_run_to_pick(tmp_path: Path) -> None:
    runs = _runs(tmp_path)
    result = runner.invoke(app, ["report", str(runs)])
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: {runs} is a folder of 2 run directories (a, b), not a run: give the runs to use "
        f"(e.g. {runs / 'a'}), or a study directory (`rescue-bench sweep` makes one)"
    )


@pytest.mark.parametrize("command", ["report", "compare", "score"])
def test_a_file_where_a_run_directory_belongs_is_called_a_file(tmp_path: Path, command: str) -> None:
    runs = _runs(tmp_path)
    scores = runs / "a" / "scores.json"
    scores.write_text("not json")  # any file: the command must say it is not a directory
    args = {"report": [], "compare": [str(runs / "b")], "score": ["--judge", "openai/j"]}[command]
    result = runner.invoke(app, [command, str(scores), *args])
    assert result.exit_code == (2 if command == "score" else 1)
    assert result.output.strip() == (
        f"error: {scores} is a file, not a run directory: give the directory that holds it ({runs / 'a'})"
    )


def test_run_help_lists_every_exit_code_on_one_line_and_the_defaults_that_matter() -> None:
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "100"}, terminal_width=100)
    lines = result.output.splitlines()
    codes = [line for line in lines if "Exit codes:" in line]
    assert len(codes) == 1
    for code in (
        "0 finished",
        "1 error",
        "2 usage",
        "3 stopped",
        "4 incomplete",
        "5 degraded",
        "130 interrupted",
    ):
        assert code in codes[0]
    text = " ".join(lines)
    for default in ("(default: 16)", "(default: 120.0)", "(default: 5)", "(default: demo)"):
        assert default in text
    assert "docs/" not in text
