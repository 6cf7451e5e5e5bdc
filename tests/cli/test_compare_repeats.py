"""`rescue-bench compare` on runs made with `--repeats 2`: values as their scores.json (the repeat means),
instances counted once, and a repeated run against an unrepeated one refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app

RUNNER = CliRunner()


def make_run(where: Path, seed: int, repeats: int) -> Path:
    args = ["run", "--model", "baseline/random", "--data", "demo", "--tasks", "itp,rpp", "--seed", str(seed)]
    args += ["--repeats", str(repeats), "--out", str(where), "--no-cache", "--quiet"]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    return where


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare-repeats")
    return {
        "a": make_run(root / "a", 1, 2),
        "b": make_run(root / "b", 2, 2),
        "once": make_run(root / "once", 1, 1),
        "c": make_run(root / "c", 3, 2),
    }


def test_two_repeated_runs_compare_on_their_repeat_means(runs: dict[str, Path]) -> None:
    a, b = runs["a"], runs["b"]
    result = RUNNER.invoke(app, ["compare", str(a), str(b), "--resamples", "200", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    scores_a, scores_b = (json.loads((r / "scores.json").read_text()) for r in (a, b))
    lines = [json.loads(line) for line in (a / "predictions.jsonl").read_text().splitlines()]
    for task in ("itp", "rpp"):
        block = data[task]["all"]
        instances = {x["instance_id"] for x in lines if x["task"] == task}
        assert block["n"] == len(instances) == scores_a[task]["all"]["n"] and block["repeats"] == 2
        assert block["mcnemar"]["n"] == len(instances)
        for name, entry in block["metrics"].items():
            assert entry["a"] == pytest.approx(scores_a[task]["all"][name])
            assert entry["b"] == pytest.approx(scores_b[task]["all"][name])
    table = RUNNER.invoke(app, ["compare", str(a), str(b), "--resamples", "100"])
    assert table.exit_code == 0 and "ITP" in table.output


def test_three_repeated_runs_give_the_matrix(runs: dict[str, Path]) -> None:
    paths = [str(runs[k]) for k in ("a", "b", "c")]
    result = RUNNER.invoke(app, ["compare", *paths, "--resamples", "100", "--json"])
    assert result.exit_code == 0, result.output
    rpp = next(t for t in json.loads(result.output)["tasks"] if t["task"] == "rpp")["scopes"]["all"]
    scores = [json.loads((Path(p) / "scores.json").read_text())["rpp"]["all"] for p in paths]
    assert rpp["n"] == scores[0]["n"]
    accuracy = next(m for m in rpp["metrics"] if m["metric"] == "accuracy")
    assert accuracy["values"] == pytest.approx([s["accuracy"] for s in scores])


@pytest.mark.parametrize("many", [False, True])
def test_a_repeated_run_against_an_unrepeated_one_is_refused(runs: dict[str, Path], many: bool) -> None:
    paths = [str(runs["a"]), str(runs["once"]), *([str(runs["b"])] if many else [])]
    result = RUNNER.invoke(app, ["compare", *paths, "--resamples", "10"])
    assert result.exit_code != 0
    # The difference is named first (not like for like), then the one-line refusal.
    *named, message = result.output.strip().splitlines()
    assert message.startswith("error: ") and "repeats" in message and "Traceback" not in result.output
    assert named == [next(line for line in named if line.startswith("not like for like: repeats: "))]
