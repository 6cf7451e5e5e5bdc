"""CircularEval (``--perturb label-order:all``): every rotation of the closed label lists is one repeat of the
run; an instance counts only if it is correct under all of them, reported beside the plain accuracy."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from tests.fakes.openai_server import ChatRequest, FakeOpenAIServer, schema_answer
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.rundir import read_jsonl
from rescue_bench.tasks import get_task
from rescue_bench.tasks.base import TaskConfig
from rescue_bench.tasks.perturb.order import rotate

RUNNER = CliRunner()
HEADLINE = {"rpp": "accuracy", "stp": "recall_at_1", "ssp": "recall_at_1"}
FAVOURITE = {"attack_attack", "Couple"}
"""The scripted model's favourite answers: picked wherever shown, whatever the order."""


def run(out: Path, *extra: str) -> dict[str, Any]:
    args = ["run", "-q", "--data", "demo", "--out", str(out), "--perturb", "label-order:all", *extra]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    return dict(json.loads((out / "scores.json").read_text()))


def by_repeat(out: Path, task: str) -> dict[int, dict[str, dict[str, Any]]]:
    """Prediction lines of ``task`` per repeat, by instance id."""
    out_: dict[int, dict[str, dict[str, Any]]] = {}
    for line in read_jsonl(out / "predictions.jsonl"):
        if line["task"] == task:
            out_.setdefault(line.get("repeat", 0), {})[line["instance_id"]] = line
    return out_


def top1(line: Mapping[str, Any]) -> Any:
    value = line["prediction"]
    return value[0] if line["valid"] and value else None


def expected(
    correct: Mapping[str, Sequence[bool]], scenario: Mapping[str, str], scope: str
) -> tuple[float, float]:
    """Plain (mean over rotations) and circular accuracy of one scope, from per-rotation verdicts."""
    ids = [i for i in correct if scope == "all" or scenario[i] == scope]
    rotations = len(next(iter(correct.values())))
    plain = fmean(fmean(correct[i][r] for i in ids) for r in range(rotations))
    return plain, fmean(all(correct[i]) for i in ids)


def test_random_baseline_on_the_demo(tmp_path: Path) -> None:
    scores = run(tmp_path / "run", "--model", "baseline/random", "--tasks", "itp,rpp,stp,ssp")
    base = tmp_path / "base"
    assert (
        RUNNER.invoke(
            app,
            [
                "run",
                "-q",
                "--model",
                "baseline/random",
                "--data",
                "demo",
                "--tasks",
                "itp,rpp,stp,ssp",
                "--out",
                str(base),
            ],
        ).exit_code
        == 0
    )
    base_ids = {line["instance_id"] for line in read_jsonl(base / "predictions.jsonl")}
    assert {line["instance_id"] for line in read_jsonl(tmp_path / "run" / "predictions.jsonl")} == base_ids
    assert "circular" not in scores["itp"]["all"] and "repeats" not in scores["itp"]["all"]
    for task in ("rpp", "stp", "ssp"):
        lines = by_repeat(tmp_path / "run", task)
        orders = {i: line["meta"]["perturbation"]["label_order"] for i, line in lines[0].items()}
        rotations = max(len(order) for order in orders.values())
        assert sorted(lines) == list(range(rotations))  # one repeat per rotation of the longest list
        for r, repeat in lines.items():  # rotation r of every list, r modulo the list's length
            assert all(
                repeat[i]["meta"]["perturbation"]["label_order"] == list(rotate(o, r))
                for i, o in orders.items()
            )
        correct = {i: [top1(lines[r][i]) == lines[0][i]["gold"] for r in range(rotations)] for i in orders}
        scenario = {i: line["scenario"] for i, line in lines[0].items()}
        for scope in ("couple", "family", "all"):
            plain, circular = expected(correct, scenario, scope)
            entry = scores[task][scope]
            assert entry[HEADLINE[task]] == pytest.approx(plain)
            assert entry["circular"]["accuracy"] == pytest.approx(circular)
            assert entry["circular"]["n"] == entry["n"] == sum(scope in ("all", s) for s in scenario.values())
        # The baseline sees each rotation: its guesses are not the same in every repeat.
        assert any(top1(lines[0][i]) != top1(lines[1][i]) for i in orders)


def favourite_or_first(request: ChatRequest) -> str:
    """A scripted model: a favourite label wherever it is offered, else the first label shown."""
    answer = json.loads(schema_answer(request))
    shown = json.dumps(request.schema)
    for item in answer["predictions"]:
        key = next(k for k in item if k.endswith("_top3"))
        liked = [label for label in FAVOURITE if f'"{label}"' in shown]
        item[key] = liked[:1] or item[key][:1]
    return json.dumps(answer)


def test_scripted_replies_against_counts_computed_from_the_data(tmp_path: Path) -> None:
    with FakeOpenAIServer(favourite_or_first) as server:
        scores = run(
            tmp_path / "run",
            "--model",
            "openai/fake",
            "--base-url",
            server.base_url,
            "--tasks",
            "rpp,stp",
            "--no-cache",
        )
    samples = load_samples("demo")
    for task in ("rpp", "stp"):
        # The instances as the task builds them: rotation r shows rotate(candidates, r) (label-order:0 is
        # the task's own order), and the scripted model's answer follows from that list alone.
        instances = [i for s in samples for i in get_task(task).build(s, TaskConfig())]
        rotations = max(len(i.candidates) for i in instances)
        correct = {}
        for inst in instances:
            liked = [label for label in FAVOURITE if label in inst.candidates]
            answers = [liked[0] if liked else rotate(inst.candidates, r)[0] for r in range(rotations)]
            correct[inst.id] = [answer == inst.gold for answer in answers]
        scenario = {i.id: i.scenario for i in instances}
        for scope in ("couple", "family", "all"):
            plain, circular = expected(correct, scenario, scope)
            entry = scores[task][scope]
            assert entry[HEADLINE[task]] == pytest.approx(plain)
            assert entry["circular"]["accuracy"] == pytest.approx(circular)
            assert entry["repeats"]["k"] == rotations
        assert scores[task]["all"]["circular"]["accuracy"] > 0  # the favourite is right under every order
        assert scores[task]["all"]["circular"]["accuracy"] < scores[task]["all"][HEADLINE[task]]
