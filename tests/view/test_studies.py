"""A study directory opens as its runs (``view runs/study``), in the study's order."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rescue_bench.cli.main import app as cli
from rescue_bench.view.studies import expand_runs


def test_a_study_directory_opens_as_its_runs(tmp_path: Path) -> None:
    study = tmp_path / "study"
    args = ["sweep", "--model", "baseline/random", "--model", "baseline/majority", "--data", "demo"]
    result = CliRunner().invoke(cli, [*args, "--out", str(study), "--no-bertscore"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["view", str(study), "--bundle", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert "leaderboard.html" in result.output  # a study opens on its leaderboard
    index = (tmp_path / "site" / "index.html").read_text()
    assert "baseline/random" in index and "baseline/majority" in index
    assert (tmp_path / "site" / "matrices-1.html").exists()
    assert (tmp_path / "site" / "leaderboard.html").exists()


def test_a_pending_run_is_named_and_a_damaged_study_file_is_one_line(tmp_path: Path) -> None:
    study = tmp_path / "study"
    study.mkdir()
    runs_listed = [{"model": "m/a", "dir": "a"}, {"model": "m/b", "dir": "b"}]
    (study / "study.json").write_text(json.dumps({"runs": runs_listed}))
    (study / "b").mkdir()
    (study / "b" / "predictions.jsonl").write_text("")
    runs, notes = expand_runs([study])
    assert runs == [study / "b"] and len(notes) == 1 and str(study / "a") in notes[0]
    (study / "study.json").write_text(json.dumps({"runs": [{"model": "m/x", "dir": "../elsewhere"}]}))
    result = CliRunner().invoke(cli, ["view", str(study)])
    assert result.exit_code == 1 and "study.json" in result.output and "not inside the study" in result.output
    (study / "study.json").write_text("{not json")
    result = CliRunner().invoke(cli, ["view", str(study)])
    assert result.exit_code == 1 and "study.json" in result.output and "Traceback" not in result.output
