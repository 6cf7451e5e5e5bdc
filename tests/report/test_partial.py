"""`report` on an unfinished run: refused with the counts, or with --partial marked PARTIAL everywhere."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from rescue_bench.cli.main import app

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("partial") / "run"
    result = invoke(
        "run", "--model", "baseline/random", "--data", "demo", "--tasks", "itp,rpp", "--out", str(out), "-q"
    )
    assert result.exit_code == 0, result.output
    return out


def killed_copy(finished: Path, target: Path, keep: int) -> dict[str, tuple[int, int]]:
    """What a SIGKILL after ``keep`` predictions leaves: the first lines, run.json as written at the start.

    Returns the expected (done, planned) per task, counted here from the lines kept.
    """
    target.mkdir()
    lines = (finished / "predictions.jsonl").read_text().splitlines(keepends=True)
    (target / "predictions.jsonl").write_text("".join(lines[:keep]))
    (target / "requests.jsonl").write_text("")
    run = json.loads((finished / "run.json").read_text())
    planned = {task: c["instances"] for task, c in run["counts"].items()}
    run["status"] = "running"
    run["counts"] = {task: {"instances": n} for task, n in planned.items()}
    (target / "run.json").write_text(json.dumps(run))
    kept = [json.loads(line)["task"] for line in lines[:keep]]
    return {task: (kept.count(task), n) for task, n in planned.items()}


def test_an_unfinished_run_is_refused_naming_its_counts(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "killed"
    expected = killed_copy(finished, run, keep=30)
    result = invoke("report", str(run), "--out", str(tmp_path / "rep"))
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    counts = ", ".join(f"{task} {done}/{planned}" for task, (done, planned) in expected.items())
    assert line.startswith(f"error: not finished: {run} (status running): {counts} instances done")
    assert "--partial" in line
    assert not (tmp_path / "rep").exists()


def test_partial_marks_every_table_page_and_export(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "killed"
    expected = killed_copy(finished, run, keep=30)
    out = tmp_path / "rep"
    result = invoke("report", str(run), "--out", str(out), "--partial")
    assert result.exit_code == 0, result.output
    counts = ", ".join(f"{task} {done}/{planned}" for task, (done, planned) in expected.items())
    banner = f"PARTIAL: {run} (status running): {counts} instances done"
    assert f"warning: {banner}" in result.output

    md = (out / "report.md").read_text()
    assert f"**{banner}**" in md
    titles = [line for line in md.splitlines() if line.startswith(("# ", "## ", "### "))]
    assert titles and all(t.endswith("[PARTIAL]") or t == "## Figures" for t in titles)
    page = (out / "report.html").read_text()
    assert banner in page and page.count("[PARTIAL]") >= len(titles)
    with (out / "results.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][-1] == "partial" and len(rows) > 1 and all(r[-1] == banner for r in rows[1:])
    tex = (out / "table.tex").read_text()
    assert tex.startswith(f"% {banner}\n") and tex.count("[PARTIAL]") == tex.count(r"\caption")
    book = load_workbook(out / "results.xlsx")
    for sheet in book.worksheets:
        assert any(banner in str(c.value) for row in sheet.iter_rows() for c in row), sheet.title


def test_a_finished_run_is_not_marked(finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    result = invoke("report", str(finished), "--out", str(out))
    assert result.exit_code == 0, result.output
    for name in ("report.md", "report.html", "results.csv", "table.tex"):
        assert "PARTIAL" not in (out / name).read_text(), name


def test_a_finished_status_with_instances_missing_is_unfinished(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "short"
    expected = killed_copy(finished, run, keep=200)
    manifest = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**manifest, "status": "finished"}))
    result = invoke("report", str(run), "--out", str(tmp_path / "rep"))
    assert result.exit_code == 1
    done, planned = expected["rpp"]
    assert done < planned and f"rpp {done}/{planned}" in result.output


def test_a_run_without_predictions_is_an_error(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "empty"
    killed_copy(finished, run, keep=0)
    for args in ((), ("--partial",)):
        result = invoke("report", str(run), "--out", str(tmp_path / "rep"), *args)
        assert result.exit_code == 1
        assert result.output.strip() == f"error: {run} holds no predictions: there is nothing to report"
