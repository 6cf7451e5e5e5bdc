"""`estimate` in a terminal of 100 columns: its task and judge tables fit, every figure whole."""

from __future__ import annotations

from typer.testing import CliRunner

from rescue_bench.cli.main import app


def test_the_estimate_and_judge_tables_fit_100_columns() -> None:
    args = ["estimate", "--model", "openai/gpt-4o-mini", "--data", "demo", "--judge", "openai/gpt-5.4"]
    prices = ["--price-in", "0.15", "--price-out", "0.6"]
    result = CliRunner().invoke(app, [*args, *prices], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line for line in lines if len(line) > 100] == []
    judge = next(line for line in lines if line.lstrip().startswith("openai/gpt-5.4 "))
    assert len(judge.split()) == 7, judge  # the judge, five counts and the cost, none wrapped
    total = next(line for line in lines if line.lstrip().startswith("all "))
    assert len(total.split()) == 6, total
