"""``scores.json`` of a judge pass under VP's judge-scale readings (``--vp-judge-scale``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.engine.test_run_judge import grade, run_cli
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.judge.scores import judged_run_lines, rescaled
from rescue_bench.metrics.generation import viewpoint_integer
from rescue_bench.report.build import with_scores
from rescue_bench.rundir import PredictionLine, load_run


def test_the_integer_reading_rounds_each_instance_then_averages() -> None:
    lines = [
        PredictionLine(instance_id=f"s::vp::{t}", task="vp", scores={"total": float(t), "llm": 1 + 4 * t / 6})
        for t in range(7)
    ]
    integer = {"vp": viewpoint_integer}
    assert [line.scores["llm"] for line in rescaled(lines, integer)] == [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0]
    unscored = PredictionLine(instance_id="s::vp::9", task="vp", scores={"total": None, "llm": None})
    assert rescaled([unscored], integer)[0].scores["llm"] is None
    assert rescaled(lines, {})[5].scores["llm"] == 1 + 4 * 5 / 6  # the default reading: as derived


@pytest.mark.parametrize(("scale", "llm"), [("linear", 1 + 4 * 5 / 6), ("integer", 4.0)])
def test_the_vp_judge_scale_is_applied_recorded_and_named(tmp_path: Path, scale: str, llm: float) -> None:
    out = tmp_path / "run"
    args = ["--model", "baseline/random", "--tasks", "vp", "--judge", "vllm/fakejudge", "--no-bertscore"]
    args += ["--limit-samples", "2", "--vp-judge-scale", scale, "--out", str(out)]
    with FakeOpenAIServer(grade) as server:  # every VP verdict: pairing 2 + viewpoint 3 = 5 of 6
        result = run_cli(*args, "--base-url", server.base_url)
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "scores.json").read_text())
    entry = scores["vp"]["all"]
    valid = entry["n_judged"]
    # Invalid answers (none from this baseline, normally) score the floor 1 in either reading.
    assert valid == entry["n"] > 0 and entry["llm"] == pytest.approx(llm)
    assert entry["total_0_6"] == pytest.approx(5.0)
    rule = scores["_meta"]["scoring_rules"]["vp"]["llm"]
    assert ("rounded" in rule) == (scale == "integer")
    # Every reader that folds the judgments in itself (viewer, exports, robustness, the report of an
    # unfinished run) reads each instance's VP LLM as the run does.
    run = load_run(out)
    assert [line.scores["llm"] for line in judged_run_lines(run)] == [pytest.approx(llm)] * valid
    again = with_scores(replace(run, score_record=None)).score_record
    assert again is not None and again.entry("vp").metric("llm") == pytest.approx(llm)
