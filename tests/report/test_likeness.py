"""Like-for-like comparisons: every difference that changes what a number means is named, judged metrics of
runs judged by different judges are refused unless asked, and unfinished runs are refused unless --partial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.engine.test_run_judge import grade
from tests.evaluation.test_run import dead_url
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.report.likeness import differences
from rescue_bench.rundir import load_run

runner = CliRunner()
BASE = (
    "run",
    "--data",
    "demo",
    "--limit-samples",
    "1",
    "--no-cache",
    "-q",
    "--no-bertscore",
    "--tasks",
    "er",
)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("likeness")
    runs = {}
    with FakeOpenAIServer(grade) as fake:
        for name, extra in (
            ("j1", ("--judge", "vllm/j1")),
            ("j1b", ("--judge", "vllm/j1", "--seed", "9")),
            ("j2", ("--judge", "vllm/j2")),
            ("ctx", ("--judge", "vllm/j1", "--context-size", "0")),
        ):
            out = root / name
            args = (
                *BASE,
                "--model",
                "baseline/random",
                *extra,
                "--base-url",
                fake.base_url,
                "--out",
                str(out),
            )
            result = runner.invoke(app, list(args), catch_exceptions=False)
            assert result.exit_code == 0, result.output
            runs[name] = out
    return runs


def test_like_runs_have_no_difference(judged: dict[str, Path]) -> None:
    assert differences([load_run(judged["j1"]), load_run(judged["j1b"])]) == []


def test_each_difference_is_named_with_what_it_changes(judged: dict[str, Path]) -> None:
    found = {d.name: d for d in differences([load_run(judged["j1"]), load_run(judged["j2"])])}
    assert set(found) == {"judges"} and found["judges"].affects == "judged"
    assert "vllm/j1" in found["judges"].values[0] and "vllm/j2" in found["judges"].values[1]
    context = differences([load_run(judged["j1"]), load_run(judged["ctx"])])
    assert [(d.name, d.affects) for d in context] == [("context size", "all")]


def test_compare_refuses_judge_scores_of_different_judges_unless_asked(judged: dict[str, Path]) -> None:
    pair = [str(judged["j1"]), str(judged["j2"])]
    refused = runner.invoke(app, ["compare", *pair])
    assert refused.exit_code == 2 and "judged by different judges" in refused.output
    assert "--allow-different-judges" in refused.output
    allowed = runner.invoke(app, ["compare", *pair, "--allow-different-judges"])
    assert allowed.exit_code == 0, allowed.output
    assert "not like for like: judges: " in allowed.output


def test_compare_names_a_difference_of_protocol(judged: dict[str, Path]) -> None:
    result = runner.invoke(app, ["compare", str(judged["j1"]), str(judged["ctx"])])
    assert result.exit_code == 0, result.output
    assert "not like for like: context size: " in result.output


def test_a_report_names_the_difference_under_its_leaderboard(judged: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", str(judged["j1"]), str(judged["j2"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Not like for like: judges: " in (out / "report.md").read_text(encoding="utf-8")


def test_compare_refuses_an_unfinished_run_unless_partial(judged: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "dead"
    args = ("run", "--data", "demo", "--limit-samples", "1", "--no-cache", "-q", "--tasks", "er")
    dead = runner.invoke(
        app, [*args, "--model", "vllm/m", "--max-retries", "0", "--base-url", dead_url(), "--out", str(out)]
    )
    assert dead.exit_code == 4, dead.output
    refused = runner.invoke(app, ["compare", str(judged["j1"]), str(out)])
    assert refused.exit_code == 1 and "not finished" in refused.output
    partial = runner.invoke(app, ["compare", str(judged["j1"]), str(out), "--partial"])
    assert "PARTIAL: " in partial.output and "status incomplete" in partial.output


def test_compare_refuses_runs_that_share_no_instance(judged: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "other"
    args = ("run", "--data", "demo", "--sample-ids", str(_ids(tmp_path)), "--no-cache", "-q", "--tasks", "er")
    made = runner.invoke(app, [*args, "--model", "baseline/random", "--no-bertscore", "--out", str(out)])
    assert made.exit_code == 0, made.output
    refused = runner.invoke(app, ["compare", str(judged["j1"]), str(out), "--allow-different-judges"])
    assert refused.exit_code == 2 and "share no instance" in refused.output


def _ids(tmp_path: Path) -> Path:
    path = tmp_path / "ids.txt"
    path.write_text(load_samples("demo")[-1].sample_id + "\n", encoding="utf-8")
    return path


def test_the_viewer_leaderboard_names_the_difference(judged: dict[str, Path]) -> None:
    pytest.importorskip("fastapi", reason="the viewer's server needs the view extra")
    from fastapi.testclient import TestClient

    from rescue_bench.view.app import create_app

    client = TestClient(create_app([judged["j1"], judged["j2"]]), base_url="http://127.0.0.1")
    page = client.get("/leaderboard")
    assert page.status_code == 200 and "Not like for like: judges: " in page.text


def test_a_hostile_model_name_is_text_in_every_markdown_file(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("run", "--data", "demo", "--limit-samples", "1", "--no-cache", "-q", "--tasks", "itp")
    made = runner.invoke(app, [*args, "--model", "baseline/random", "--out", str(out)])
    assert made.exit_code == 0, made.output
    manifest = json.loads((out / "run.json").read_text())
    manifest["model"]["name"] = "baseline/<script>alert(1)</script>"
    (out / "run.json").write_text(json.dumps(manifest))
    report = tmp_path / "report"
    assert runner.invoke(app, ["report", str(out), "--out", str(report)]).exit_code == 0
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
