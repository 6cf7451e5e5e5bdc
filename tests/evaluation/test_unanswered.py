"""No unanswered request becomes a number anywhere (issue 42, failure 1).

A run whose endpoint never answered (every instance ``request_failed``) is unfinished work: ``score`` refuses
it with ``run``'s exit code, and ``report --partial``, the study leaderboard, ``compare --partial`` and both
exports give no number for it; a partial export says so with its counts.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from tests.evaluation.test_run import dead_url
from tests.fakes.openai_server import FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app

runner = CliRunner()
BASE = ("--data", "demo", "--limit-samples", "1", "--no-cache", "-q", "--no-bertscore")
TASKS = "itp,er"


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def never_answered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dead") / "run"
    args = ("--model", "vllm/m", "--tasks", TASKS, "--max-retries", "0", "--out", str(out))
    made = invoke("run", *BASE, *args, "--base-url", dead_url())
    assert made.exit_code == 4, made.output
    return out


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("live") / "run"
    with FakeOpenAIServer(schema_answer) as fake:
        made = invoke("run", *BASE, "--model", "vllm/m", "--tasks", TASKS, "--out", str(out),
                      "--base-url", fake.base_url)  # fmt: skip
    assert made.exit_code == 0, made.output
    return out


def test_score_refuses_a_run_whose_instances_got_no_answer(never_answered: Path) -> None:
    result = invoke("score", str(never_answered), "--judge", "vllm/j", "--bertscore-model", "none",
                    "--base-url", dead_url())  # fmt: skip
    assert result.exit_code == 4, result.output
    assert "got no answer" in result.output and "`score` judges only a run" in result.output
    assert not (never_answered / "scores.json").exists()
    assert json.loads((never_answered / "run.json").read_text())["status"] == "incomplete"


def _csv_values(path: Path, model: str) -> list[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows, f"{path} holds no rows"
    return [row["value"] for row in rows if row.get("model") == model]


def test_report_partial_gives_no_number_for_a_run_without_answers(
    never_answered: Path, tmp_path: Path
) -> None:
    result = invoke("report", str(never_answered), "--partial", "--out", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    assert all(value in ("", "None") for value in _csv_values(tmp_path / "r" / "results.csv", "vllm/m"))
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    board = markdown.split("\n\n## ")[1] if "\n\n## " in markdown else markdown
    assert "0.00" not in board and "1.00" not in board and "PARTIAL" in markdown


def test_compare_partial_gives_no_number_against_a_run_without_answers(
    never_answered: Path, answered: Path
) -> None:
    result = runner.invoke(app, ["compare", str(answered), str(never_answered), "--partial", "--json"])
    assert result.exit_code == 0, result.output
    compared = json.loads(result.output[result.output.index("{") :])
    for task in TASKS.split(","):
        scope = compared[task]["all"]
        assert scope["n"] == 0 and "mcnemar" not in scope
        assert all(m == {"a": None, "b": None, "diff": None, "ci": None} for m in scope["metrics"].values())
    shown = runner.invoke(app, ["compare", str(answered), str(never_answered), "--partial"])
    assert "p = " not in shown.output and "0.002" not in shown.output, shown.output


@pytest.mark.parametrize("fmt", ["eee", "hf"])
def test_a_partial_export_carries_no_number_and_says_partial(
    never_answered: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / fmt
    result = invoke("export", str(never_answered), "--format", fmt, "--out", str(out), "--partial")
    assert result.exit_code == 0, result.output
    if fmt == "eee":
        record = json.loads(next(p for p in out.glob("*.json")).read_text())
        assert record["evaluation_results"] == []
        return
    results = json.loads(next(out.glob("results_*.json")).read_text())
    completeness = results["config_general"]["completeness"]
    assert completeness["mark"] == "PARTIAL" and completeness["tasks"]["itp"]["answered"] == 0
    assert all(v is None for k, v in results["results"]["rescue_bench|itp|all"].items() if k != "n")
    card = (out / "README.md").read_text()
    assert "**PARTIAL (status incomplete): itp 0/" in card and "\nmodel-index:" not in card
