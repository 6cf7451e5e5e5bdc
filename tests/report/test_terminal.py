"""Every terminal table at 100 columns: no model name cut, no CI wrapped over lines, no line too long."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console, RenderableType
from tests.report.conftest import LONG_NAMES

from rescue_bench.report import tables
from rescue_bench.report.build import with_scores
from rescue_bench.report.comparison import (
    compare_many_run_data,
    compare_run_data,
    comparison_table,
    matrix_tables,
)
from rescue_bench.report.leaderboard import Entry, leaderboard_report
from rescue_bench.report.tables import Cell, Table
from rescue_bench.report.terminal import fit, leaderboard_view, run_summary
from rescue_bench.report.writers import text
from rescue_bench.rundir import RunData, load_run

WIDTHS = (100, 120, 200)


def render(parts: Sequence[RenderableType], width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    for part in parts:
        console.print(part)
    return console.export_text().splitlines()


def check_fits(table: Table, keys: int, width: int, names: Sequence[str], *, ci: bool) -> list[str]:
    """Render ``table`` fitted to ``width`` and check it: every line within the width, nothing cut short,
    every name and every shown value (with its CI) whole on one line."""
    lines = render(fit(table, width, keys=keys, ci=ci), width)
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert not any("…" in line for line in lines), "a cell was cut"
    for name in names:
        assert any(name in line for line in lines), f"{name} is not shown whole"
    for row in table.rows:
        for value in row[keys:]:
            if isinstance(value, Cell) and value.value is not None:
                shown = text(value, ci=ci)
                assert any(shown in line for line in lines), f"{shown} is wrapped or cut"
    return lines


@pytest.fixture(scope="module")
def runs(study_dir: Path) -> list[RunData]:
    return [with_scores(load_run(study_dir / name.replace("/", "-"))) for name in LONG_NAMES]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("ci", [False, True])
def test_the_leaderboard_fits_with_long_names(runs: list[RunData], width: int, ci: bool) -> None:
    board, keys = leaderboard_view(tables.leaderboard(runs, with_paper=True))
    # every run finished: no Status column; the validity is a value column, not repeated in each piece
    assert board.columns[:2] == ("Model", "Valid (%)") and keys == 1
    lines = check_fits(board, keys, width, LONG_NAMES, ci=ci)
    # the model column is repeated beside each part; the first part says what was measured
    assert "demo data (fictional)" in "\n".join(lines)
    assert sum("openai/gpt-4o-2024-08-06" in line for line in lines) >= 1


@pytest.mark.parametrize("width", WIDTHS)
def test_the_study_leaderboard_and_rank_groups_fit(study_dir: Path, width: int) -> None:
    entries = [Entry(name, study_dir / name.replace("/", "-"), "", "finished") for name in LONG_NAMES]
    report = leaderboard_report(entries, with_paper=True, n_resamples=50)
    check_fits(*leaderboard_view(report.table("leaderboard")), width, LONG_NAMES, ci=True)
    check_fits(report.table("rank_groups"), 1, width, LONG_NAMES, ci=False)


def test_the_run_summary_fits_where_it_used_to_be_133_columns(study_dir: Path) -> None:
    folder = study_dir / LONG_NAMES[0].replace("/", "-")
    run = load_run(folder)
    assert run.score_record is not None
    summary = run_summary(folder, run.score_record)
    lines = check_fits(summary, 1, 100, ["Both", "Couple", "Family"], ci=False)
    joined = " ".join(" ".join(lines).split())
    assert LONG_NAMES[0] in joined and "judge fake/overlap-judge" in joined


@pytest.mark.parametrize("width", WIDTHS)
def test_the_two_run_comparison_fits(runs: list[RunData], width: int) -> None:
    result = compare_run_data(runs[0], runs[1], n_resamples=50)
    table = comparison_table(result, (LONG_NAMES[0], LONG_NAMES[1]), scopes=("all", "couple"))
    check_fits(table, 3, width, [], ci=True)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("ci", [False, True])
def test_the_many_way_matrix_fits(runs: list[RunData], width: int, ci: bool) -> None:
    result = compare_many_run_data(runs, n_resamples=50)
    shown = matrix_tables(result, numbered=True, ci=ci)
    assert shown
    for table in shown:
        keys = 3 if table.key.startswith("compare_") else 2
        lines = check_fits(table, keys, width, LONG_NAMES, ci=False)
        for row in table.rows:  # each difference, with its CI and p, on one line
            for cell in row[keys:]:
                if isinstance(cell, str) and cell.startswith(
                    ("-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
                ):
                    assert any(cell in line for line in lines), cell


def test_a_name_too_long_for_any_column_becomes_a_number_with_a_legend() -> None:
    name = "org/" + "a-very-long-model-name-" * 3 + "with-more-words-v1"  # 90 characters
    table = Table("t", "T", ("Model", "ITP F1", "RPP Acc"), ((name, Cell(0.5, 0.4, 0.6), Cell(0.25)),))
    lines = render(fit(table, 100, keys=1, ci=True), 100)
    assert any(line.startswith(f"1 = {name}") for line in lines), lines
    assert all(len(line) <= 100 for line in lines)
    assert any(re.search(r"\b1\b.*0\.50 \[0\.40, 0\.60\]", line) for line in lines)


def test_names_are_shown_as_written_never_as_markup_or_terminal_codes() -> None:
    hostile = "evil/[bold red]model\x1b]0;pwned\x07"
    table = Table("t", "Title [x]", ("Model", "F1"), ((hostile, Cell(0.5, scale=100.0, digits=1)),), "")
    shown = "\n".join(render(fit(table, 100), 100))
    assert "evil/[bold red]model" in shown and "Title [x]" in shown
    assert "\x1b" not in shown and "\x07" not in shown


def test_a_piped_run_prints_its_scores_within_100_columns(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app

    args = ["run", "--model", "baseline/random", "--data", "demo", "--out", str(tmp_path / "run"), "-q"]
    result = CliRunner().invoke(app, [*args, "--no-cache", "--no-bertscore"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert sum(line.split()[:1] in (["Both"], ["Couple"], ["Family"]) for line in lines) >= 3
    for header in ("ITP F1", "RPP Acc.", "SSP MRR"):
        assert any(header in line for line in lines), header
    assert "baseline/random: finished, valid 445/445 (100.0%)" in result.output
