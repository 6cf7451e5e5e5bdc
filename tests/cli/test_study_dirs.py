"""`report`, `compare` and `export` take a study directory wherever they take a run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.report.conftest import LONG_NAMES, make_demo_run, renamed_copy
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.study.record import RunEntry, StudyRecord, write_record

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study of three finished runs with long model names, and a fourth that never started."""
    base = make_demo_run(tmp_path_factory.mktemp("runs") / "random")
    folder = tmp_path_factory.mktemp("study") / "study"
    entries = [
        RunEntry(model=name, dir=renamed_copy(base, folder / f"run{n}", name).name, status="finished")
        for n, name in enumerate(LONG_NAMES)
    ]
    entries.append(RunEntry(model="vllm/late", dir="late", status="pending"))
    write_record(folder, StudyRecord(spec={}, updated="now", runs=tuple(entries)))
    return folder


@pytest.mark.slow
def test_report_of_a_study_puts_its_leaderboard_first(study: Path) -> None:
    result = RUNNER.invoke(app, ["report", str(study), "--with-paper"])
    assert result.exit_code == 0, result.output
    md = (study / "report" / "report.md").read_text()
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings[:3] == [
        f"## Study {study}: Leaderboard (paper Table 5 layout)",
        f"## Study {study}: Rank groups",
        "## Leaderboard (paper Table 5 layout)",
    ]
    assert all(f"| {name} |" in md for name in LONG_NAMES)
    assert "| vllm/late | pending |" in md
    # the terminal shows the study's leaderboard and rank groups, every name whole, within 100 columns
    shown = [line for line in result.output.splitlines() if any(name in line for name in LONG_NAMES)]
    assert {name for name in LONG_NAMES if any(name in line for line in shown)} == set(LONG_NAMES)
    assert all(len(line) <= 100 for line in shown)


def test_compare_of_a_study_compares_its_runs(study: Path) -> None:
    result = RUNNER.invoke(app, ["compare", str(study), "--resamples", "50", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["runs"] == list(LONG_NAMES)


def test_export_of_a_study_writes_each_run(study: Path, tmp_path: Path) -> None:
    result = RUNNER.invoke(app, ["export", str(study), "--format", "eee", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run0", "run1", "run2"]
    assert all(any((tmp_path / f"run{n}").rglob("*.json")) for n in range(3))
