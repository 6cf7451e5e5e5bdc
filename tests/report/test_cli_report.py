"""`rescue-bench report` and `rescue-bench compare` on runs the project produced."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app

from .conftest import make_demo_run

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def majority_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_demo_run(tmp_path_factory.mktemp("runs") / "majority", model="baseline/majority")


@pytest.mark.slow
def test_report_command_writes_every_format(demo_run: Path, majority_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    result = RUNNER.invoke(app, ["report", str(demo_run), str(majority_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {
        "report.md",
        "report.html",
        "results.xlsx",
        "results.csv",
        "table.tex",
        "figures",
    }
    md = (out / "report.md").read_text()
    assert "| baseline/random | this toolkit |" in md and "| baseline/majority | this toolkit |" in md
    assert "(published)" not in md
    # both runs on the same data: one set of gold-only figures, a confusion matrix set per run
    assert len(list((out / "figures").glob("gold_by_position_*.png"))) == 2
    assert len(list((out / "figures").glob("baseline_majority_*confusion*.png"))) == 5


@pytest.mark.slow
def test_report_default_out_and_with_paper(demo_run: Path) -> None:
    result = RUNNER.invoke(app, ["report", str(demo_run), "--with-paper"])
    assert result.exit_code == 0, result.output
    assert "GPT-4o (published)" in (demo_run / "report" / "report.md").read_text()


def test_compare_paired_differences(demo_run: Path, majority_run: Path) -> None:
    result = RUNNER.invoke(app, ["compare", str(demo_run), str(majority_run), "--resamples", "200", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    a = json.loads((demo_run / "scores.json").read_text())
    b = json.loads((majority_run / "scores.json").read_text())
    rpp = data["rpp"]["all"]["metrics"]["accuracy"]
    assert data["rpp"]["n_shared"] == a["rpp"]["all"]["n"]
    assert rpp["diff"] == pytest.approx(a["rpp"]["all"]["accuracy"] - b["rpp"]["all"]["accuracy"])
    assert rpp["ci"][0] <= rpp["diff"] <= rpp["ci"][1]
    assert set(data["rpp"]["all"]["mcnemar"]) >= {"a_only", "b_only", "p_exact"}
    # the judge scores come from judgments.jsonl, so ER is compared too
    assert data["er"]["all"]["metrics"]["llm"]["a"] == pytest.approx(a["er"]["all"]["llm"])
    table = RUNNER.invoke(
        app, ["compare", str(demo_run), str(majority_run), "--resamples", "100", "--scopes", "couple,family"]
    )
    assert table.exit_code == 0, table.output
    assert re.search(r"^ *RPP +Couple +accuracy ", table.output, re.M), table.output
    assert "top-1 correct (McNemar)" in table.output
    assert not re.search(r"^ *RPP +Both ", table.output, re.M)
    assert all(len(line) <= 100 for line in table.output.splitlines())


def test_user_errors_are_one_line(tmp_path: Path, demo_run: Path) -> None:
    missing = RUNNER.invoke(app, ["report", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and missing.output.startswith("error: run directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    not_run = RUNNER.invoke(app, ["compare", str(empty), str(demo_run)])
    assert not_run.exit_code == 1 and "predictions.jsonl is missing" in not_run.output
    bad_scope = RUNNER.invoke(app, ["compare", str(demo_run), str(demo_run), "--scopes", "both"])
    assert bad_scope.exit_code == 2 and "--scopes" in bad_scope.output
    broken = tmp_path / "broken"
    broken.mkdir()
    line = '{"instance_id": "%s", "task": "itp"}\n'
    (broken / "predictions.jsonl").write_text(line % "a" + "not json\n" + line % "b")
    damaged = RUNNER.invoke(app, ["report", str(broken)])
    assert damaged.exit_code == 1 and "predictions.jsonl:2" in damaged.output
    misspelt = tmp_path / "misspelt"
    misspelt.mkdir()
    (misspelt / "predictions.jsonl").write_text(
        line % "a" + '{"instance_id": "b", "task": "itp", "vaild": true}\n'
    )
    typo = RUNNER.invoke(app, ["report", str(misspelt)])
    assert typo.exit_code == 1 and typo.output.count("\n") == 1
    assert "predictions.jsonl:2: field 'vaild'" in typo.output
    assert "Traceback" not in damaged.output + not_run.output + typo.output
