"""A ten-model study in a terminal of 100 and of 120 columns: `sweep` and `report` print no line over the
width, every model name whole in every table, the leaderboard in five tables at most, short statuses, the
failure reasons as a numbered list; `compare` of the ten runs is compact. One model's requests partly fail
(its run is partial), one answers nonsense (degraded)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.study.helpers import TEN_NAMES, study_toml, ten_servers
from typer.testing import CliRunner

from rescue_bench.cli.main import app

NAMES = TEN_NAMES
TITLES = ("Leaderboard (paper Table 5 layout)", "Rank groups", "Study")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[int, str]]]:
    """The study file, and what `sweep` printed at 100 and at 120 columns (the second call resumes)."""
    folder = tmp_path_factory.mktemp("ten")
    with ten_servers() as models:
        path = folder / "study.toml"
        path.write_text(study_toml(folder / "out", models, tasks="itp,rpp,stp,ssp"))
        printed = {}
        for width in (100, 120):
            result = CliRunner().invoke(app, ["sweep", str(path), "--quiet"], env={"COLUMNS": str(width)})
            assert result.exit_code == 4, result.output  # the partly failing model's run is incomplete
            printed[width] = result.stdout
        yield folder / "out", printed


def _too_long(output: str, width: int) -> list[str]:
    return [line for line in output.splitlines() if len(line) > width]


def _tables(output: str) -> list[str]:
    """The printed tables (each piece of a split table on its own), from their title line to the next."""
    pieces: list[list[str]] = []
    for line in output.splitlines():
        if line.startswith(TITLES):
            pieces.append([])
        if pieces:
            pieces[-1].append(line)
    return ["\n".join(piece) for piece in pieces]


@pytest.mark.parametrize("width", [100, 120])
def test_sweep_fits_the_width_with_every_name_whole(study: tuple[Path, dict[int, str]], width: int) -> None:
    output = study[1][width]
    assert _too_long(output, width) == [], output
    tables = _tables(output)
    boards = [t for t in tables if t.startswith(TITLES[0])]
    assert 1 <= len(boards) <= 5, output
    assert len([t for t in tables if t.startswith("Study")]) == 1
    for table in tables:
        for name in NAMES:
            assert name in table, f"{name} is not whole in:\n{table}"


def test_sweep_says_short_statuses_and_numbers_the_reasons(study: tuple[Path, dict[int, str]]) -> None:
    output = study[1][100]
    board = _tables(output)[0]
    row = {line.split()[0]: line.split()[1:] for line in board.splitlines() if line.split()}
    assert row["openai/gpt-4o-mini"][0] == "ok"
    assert row["vllm/nonsense-answers"][0] == "degraded"
    assert row["vllm/partly-failing-endpoint"][0] == "partial"
    done, planned = map(int, row["vllm/partly-failing-endpoint"][1].split("/"))
    assert 0 < done < planned
    assert "mean of finished runs" not in board
    # no CIs shown, so no legend of their brackets: the note says where they are
    assert "brackets" not in output.lower() and "95% CIs: --ci" in " ".join(output.split())
    study_table = _tables(output)[-1]
    reasons = [line for line in study_table.splitlines() if line[:3] in ("1. ", "2. ")]
    assert [r.split(": ")[0] for r in reasons] == [
        "1. vllm/partly-failing-endpoint",
        "2. vllm/nonsense-answers",
    ]


@pytest.mark.slow  # the whole report of ten runs, figures included
def test_report_of_the_study_fits_100_columns(
    study: tuple[Path, dict[int, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the files it wrote are listed by their paths, which no width wraps
    result = CliRunner().invoke(
        app, ["report", str(study[0]), "--partial", "--out", "r"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    assert _too_long(result.stdout, 100) == [], result.stdout
    for table in _tables(result.stdout):
        for name in NAMES:
            assert name in table


def test_compare_of_ten_runs_is_compact(study: tuple[Path, dict[int, str]]) -> None:
    result = CliRunner().invoke(
        app, ["compare", str(study[0]), "--partial", "--resamples", "200"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert _too_long(result.stdout, 100) == [], result.stdout
    assert len(lines) < 300, f"{len(lines)} lines"  # the full matrices: about 2,400
    assert result.stdout.startswith("Values and rank groups")
    values = result.stdout.split("\n\n")[0]
    for number, name in enumerate(NAMES, start=1):
        assert f"{number} {name}" in values
    assert "adjusted p, row vs column" in result.stdout and "Significant at 0.05:" in result.stdout
    assert "McNemar" not in result.stdout.replace("McNemar's pairs", "")
