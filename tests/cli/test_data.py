"""`rescue-bench data validate | stats | synth` end to end through the typer app."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.synth import write_synthetic

runner = CliRunner()


def _run(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    path = tmp_path / "synth.jsonl"
    write_synthetic(path, samples=11, seed=5)
    return path


@pytest.fixture
def with_warning(synthetic: Path, tmp_path: Path) -> Path:
    lines = synthetic.read_text().splitlines()
    first = json.loads(lines[0])
    first["rows"][0]["utterance_type"] = "complaint"
    path = tmp_path / "warned.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return path


def test_validate_clean_source(synthetic: Path) -> None:
    result = _run("data", "validate", str(synthetic))
    assert result.exit_code == 0
    assert result.stdout == f"{synthetic}: 11 usable samples, {_rows(synthetic)} rows: 0 errors, 0 warnings\n"


def test_validate_warnings_fail_only_when_strict(with_warning: Path) -> None:
    assert _run("data", "validate", str(with_warning)).exit_code == 0
    strict = _run("data", "validate", str(with_warning), "--strict", "--format", "json")
    assert strict.exit_code == 1
    payload = json.loads(strict.stdout)
    assert list(payload) == ["errors", "warnings"] and payload["errors"] == []
    [warning] = payload["warnings"]
    assert warning == {
        "severity": "warning",
        "message": "utterance_type 'complaint' is not an utterance type",
        "file": str(with_warning),
        "line": 1,
        "sample_id": "synthetic/couple_0001",
        "row_index": 1,
        "path": "rows[0].utterance_type",
    }


def test_validate_real_subset_has_no_errors(real_subset: Path) -> None:
    result = _run("data", "validate", str(real_subset), "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["errors"] == []


def test_stats_json_on_the_real_subset(real_subset: Path) -> None:
    result = _run("data", "stats", str(real_subset), "--format", "json")
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert list(payload) == ["couple", "family", "all"]
    couple, family = payload["couple"], payload["family"]
    assert (couple["samples"], couple["turns"], round(couple["duration_min"], 3)) == (3, 69, 7.775)
    assert (round(100 * couple["therapist_share"], 2), couple["avg_speakers"]) == (40.58, 3.0)
    assert (family["samples"], family["turns"], family["duration_sec"]) == (1, 112, 1327.0)
    assert (round(100 * family["therapist_share"], 2), family["avg_speakers"]) == (53.57, 4.0)
    assert family["transitions"]["total"] == 20
    assert couple["transitions"]["pairs"]["attack_attack->withdraw_withdraw"] == 1


@pytest.mark.parametrize("fmt", ["table", "md", "csv"])
def test_stats_formats(synthetic: Path, fmt: str) -> None:
    result = _run("data", "stats", str(synthetic), "--format", fmt)
    assert result.exit_code == 0
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        assert [r["scope"] for r in rows] == ["couple", "family", "all"]
        assert int(rows[2]["samples"]) == 11
    else:
        assert "Therapist turn share" in result.stdout
        assert "last row's end_time minus the first row's start_time" in " ".join(result.stdout.split())


def test_stats_out_writes_csv_and_heatmaps(synthetic: Path, tmp_path: Path) -> None:
    out = tmp_path / "figures"
    result = _run("data", "stats", str(synthetic), "--format", "json", "--out", str(out))
    assert result.exit_code == 0
    json.loads(result.stdout)  # stdout stays pure JSON; file notes go to stderr
    for scenario in ("couple", "family"):
        assert (out / f"transitions_{scenario}.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / f"transitions_{scenario}.csv").read_text().startswith("from,to,count,row_share\n")
    assert f"wrote {out / 'stats.json'}" in result.stderr


def test_stats_refuses_a_source_with_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"rows": []}\n{"rows": 3}\n')
    result = _run("data", "stats", str(path))
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {path}:1 sample bad/line1 rows: 'rows' is empty (and 1 more; "
        f"run `rescue-bench data validate {path}`)\n"
    )


def test_synth_writes_a_loadable_file(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "s.jsonl"
    result = _run("data", "synth", "--samples", "20", "--seed", "1", "--out", str(out))
    assert result.exit_code == 0
    assert result.stdout.startswith("wrote 20 samples (18 couple, 2 family), ")
    assert _run("data", "validate", str(out), "--strict").exit_code == 0
    assert _run("data", "synth", "--samples", "0", "--out", str(out)).exit_code == 2
    assert _run("data", "synth", "--samples", "3").exit_code == 2  # --out is required


def _rows(path: Path) -> int:
    return sum(len(json.loads(line)["rows"]) for line in path.read_text().splitlines())


def test_get_then_the_short_name_works_everywhere_a_path_does(tmp_path: Path) -> None:
    from tests.fakes.release_server import ReleaseServer

    release = tmp_path / "release.jsonl"
    write_synthetic(release, samples=191, seed=0)
    before = _run("data", "validate", "rescue")
    assert before.exit_code == 1
    assert before.output.startswith(
        "error: the official release is not downloaded yet: run `rescue-bench data get`"
    )
    with ReleaseServer(release.read_bytes()) as server:
        got = _run("data", "get", "--base-url", server.base_url)
        assert got.exit_code == 0, got.output
        assert (
            "downloaded: " in got.stdout and "191 samples (174 couple, 17 family), 7,079 rows" in got.stdout
        )
        again = _run("data", "get", "--base-url", server.base_url)
        assert "already downloaded (--force downloads again)" in again.stdout
    checked = _run("data", "validate", "rescue")
    assert checked.exit_code == 0 and "191 usable samples, 7079 rows: 0 errors" in checked.stdout
    summary = _run("tasks", "summary", "rescue", "--format", "json")
    assert summary.exit_code == 0, summary.output


@pytest.mark.parametrize("source", ["demo", "synthetic"])
def test_stats_fit_100_columns(source: str, synthetic: Path) -> None:
    """The transition matrices number their labels, so every table fits a terminal of 100 columns."""
    result = CliRunner().invoke(
        app, ["data", "stats", "demo" if source == "demo" else str(synthetic)], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line for line in lines if len(line) > 100] == []
    assert any(line.lstrip().startswith("1 ") and "·" in line for line in lines)  # a numbered matrix row
