"""`rescue-bench compare` with three runs: matrix, Holm-adjusted p-values, rank groups; two runs unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.metrics.multiplicity import adjust

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = []
    for name, seed in (("baseline/random", 1), ("baseline/majority", 1), ("baseline/random", 2)):
        where = tmp_path_factory.mktemp("runs") / f"{name.replace('/', '-')}-{seed}"
        args = ["run", "--model", name, "--data", "demo", "--tasks", "itp,rpp", "--seed", str(seed)]
        result = RUNNER.invoke(app, [*args, "--out", str(where), "--no-cache", "--quiet"])
        assert result.exit_code == 0, result.output
        out.append(where)
    return out


def test_three_runs_give_the_matrix(runs: list[Path]) -> None:
    result = RUNNER.invoke(app, ["compare", *map(str, runs), "--resamples", "200", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["adjust"] == "holm" and len(data["runs"]) == 3
    rpp = next(t for t in data["tasks"] if t["task"] == "rpp")["scopes"]["all"]
    accuracy = next(m for m in rpp["metrics"] if m["metric"] == "accuracy")
    assert [(p["a"], p["b"]) for p in accuracy["pairs"]] == [(0, 1), (0, 2), (1, 2)]
    assert [p["p_adjusted"] for p in accuracy["pairs"]] == pytest.approx(
        adjust([p["p"] for p in accuracy["pairs"]], "holm")
    )
    scores = [json.loads((r / "scores.json").read_text())["rpp"]["all"]["accuracy"] for r in runs]
    assert accuracy["values"] == pytest.approx(scores)
    # six demo conversations cannot give p below 1/32, and Holm over three pairs needs 0.05/3: no groups
    assert accuracy["groups"] == ["", "", ""] and accuracy["resolution"]["needed"] == 7
    table = RUNNER.invoke(app, ["compare", *map(str, runs), "--resamples", "100", "--adjust", "bh"])
    assert table.exit_code == 0, table.output
    flat = " ".join(table.output.split())
    assert "RPP accuracy (Both" in flat and "Benjamini-Hochberg" in flat and "McNemar" in flat
    assert "No groups: 6 conversations cannot give p below 0.031" in flat
    assert all(len(line) <= 100 for line in table.output.splitlines())
    names = [f"{n} baseline/random ({runs[0].name})" for n in (1,)] + ["2 baseline/majority"]
    assert all(name in table.output for name in names), table.output


def test_two_runs_keep_the_two_run_output(runs: list[Path]) -> None:
    result = RUNNER.invoke(app, ["compare", str(runs[0]), str(runs[1]), "--resamples", "100", "--json"])
    assert result.exit_code == 0, result.output
    assert "mcnemar" in json.loads(result.output)["rpp"]["all"]


def test_bad_options_are_one_line(runs: list[Path]) -> None:
    bad = RUNNER.invoke(app, ["compare", *map(str, runs), "--adjust", "bonferroni"])
    assert bad.exit_code == 2 and "--adjust" in bad.output
    one = RUNNER.invoke(app, ["compare", str(runs[0])])
    assert one.exit_code == 2 and "at least two" in one.output
