"""Protocol versions are read one way everywhere (issue 42, W50): a version is a whole number, a newer run is
named as such (upgrade), and a reader of numbers refuses what it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.rundir import PROTOCOL, Manifest, RunDirError
from rescue_bench.view.data import ViewError, read_run

runner = CliRunner()
RUN = ("run", "--model", "baseline/random", "--data", "demo", "--tasks", "itp", "--limit-samples", "1", "-q")


@pytest.mark.parametrize("value", ["3", True, 0, 2.5, None])
def test_a_protocol_that_is_not_a_version_is_damage_naming_the_field(value: object) -> None:
    with pytest.raises(RunDirError, match=r"run.json: field 'config': .*config.protocol is"):
        Manifest.from_json({"config": {"protocol": value}}, "run.json")


def _with_protocol(out: Path, version: int) -> None:
    assert runner.invoke(app, [*RUN, "--out", str(out)]).exit_code == 0
    manifest = json.loads((out / "run.json").read_text())
    manifest["config"]["protocol"] = version
    (out / "run.json").write_text(json.dumps(manifest))


def test_a_run_of_a_newer_protocol_is_named_and_never_read_as_this_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _with_protocol(out, 999)
    again = runner.invoke(app, [*RUN, "--out", str(out)])
    assert again.exit_code == 2 and "made by a newer rescue-bench" in again.output
    assert "upgrade rescue-bench" in again.output and "start a new directory" not in again.output
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r")])
    assert report.exit_code == 2 and "protocol version 999" in report.output, report.output
    with pytest.raises(ViewError, match="made by a newer rescue-bench"):
        read_run(out)


def test_an_older_protocol_is_named_with_what_differs() -> None:
    note = Manifest(config={"protocol": 1}).protocol_note("runs/old")
    assert note is not None and f"older than this rescue-bench's {PROTOCOL}" in note


def test_report_names_a_run_of_an_older_protocol(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _with_protocol(out, 1)
    result = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert f"follows protocol version 1, older than this rescue-bench's {PROTOCOL}" in result.output
