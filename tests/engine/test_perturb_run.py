"""``run --perturb``: perturbed runs keep the instance ids of the base run, so ``compare`` pairs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app

RUNNER = CliRunner()


def _run(out: Path, *extra: str) -> None:
    args = [
        "run",
        "-q",
        "--model",
        "baseline/random",
        "--data",
        "demo",
        "--tasks",
        "rpp,stp",
        "--out",
        str(out),
    ]
    result = RUNNER.invoke(app, [*args, *extra])
    assert result.exit_code == 0, result.output


def _ids(run: Path) -> list[str]:
    lines = (run / "predictions.jsonl").read_text().splitlines()
    return sorted(json.loads(line)["instance_id"] for line in lines)


def test_perturbed_runs_pair_with_the_base_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Wide enough that the comparison is one table (at 80 columns it is cut in two), in any terminal.
    monkeypatch.setenv("COLUMNS", "200")
    base, swapped, shuffled = tmp_path / "base", tmp_path / "swap", tmp_path / "order"
    _run(base)
    _run(swapped, "--perturb", "name-swap")
    _run(shuffled, "--perturb", "label-order")
    assert _ids(base) == _ids(swapped) == _ids(shuffled)
    config = json.loads((swapped / "run.json").read_text())["config"]
    assert config["perturbation"]["names"] == ["name-swap"]
    assert "perturbation" not in json.loads((base / "run.json").read_text())["config"]
    # The random baseline draws from the instance's own seed: renamed candidates, mapped back, are the same
    # answers, so the paired difference is exactly zero; a new label order changes the draws.
    same = RUNNER.invoke(app, ["compare", str(base), str(swapped)])
    assert same.exit_code == 0, same.output
    assert "not like for like: perturbation: " in same.output  # named: the comparison is on purpose
    rows = [" ".join(line.split()) for line in same.output.splitlines()]
    assert "STP Both recall_at_1 66 31.82 31.82 0.00 [0.00, 0.00] –" in rows
    moved = RUNNER.invoke(app, ["compare", str(base), str(shuffled)])
    assert moved.exit_code == 0, moved.output
    assert any(
        row.startswith("RPP Both accuracy 115 ")
        for row in (" ".join(x.split()) for x in moved.output.splitlines())
    )


def test_a_perturbation_is_part_of_the_compared_config(tmp_path: Path) -> None:
    base = tmp_path / "base"
    _run(base)
    again = RUNNER.invoke(
        app,
        [
            "run",
            "-q",
            "--model",
            "baseline/random",
            "--data",
            "demo",
            "--tasks",
            "rpp,stp",
            "--out",
            str(base),
            "--perturb",
            "anonymize",
        ],
    )
    assert again.exit_code != 0 and "perturbation" in again.output


def test_an_unknown_perturbation_is_a_usage_error(tmp_path: Path) -> None:
    result = RUNNER.invoke(
        app,
        [
            "run",
            "--model",
            "baseline/random",
            "--perturb",
            "shuffle-everything",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert result.exit_code == 2 and "shuffle-everything" in result.output
    assert not (tmp_path / "x").exists()
