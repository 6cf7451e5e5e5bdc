"""`estimate` counts output tokens at the cap each request is sent with: the task's cap plus the reasoning
headroom of the effort (docs/reasoning.md), or the model's ``max_tokens``; judges with their own settings
too. The caps below are the documented ones (docs/reasoning.md "The output cap"), not read from the code."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans, select_samples
from rescue_bench.evaluation.estimate import estimate_plan
from rescue_bench.judge.after_run import judge_params
from rescue_bench.judge.estimate import estimate_judge
from rescue_bench.pricing import TaskEstimate, chars_counter
from rescue_bench.spec import JudgeSpec, RunSpec, validate_spec

DOCUMENTED_CAP = {"itp": 1600, "stp": 1800, "rpp": 1800, "er": 1800, "ssp": 2200, "vp": 2200}
DOCUMENTED_HEADROOM = {"none": 0, "minimal": 1024, "low": 4096, "medium": 8192, "high": 16384, "max": 32768}
JUDGE_CAP = 1800
MODEL = "openai/gpt-4o-mini"


def spec_of(**model: object) -> RunSpec:
    return validate_spec({"model": {"name": MODEL, **model}, "data": "demo", "tasks": "all"})


def estimates(spec: RunSpec) -> dict[str, TaskEstimate]:
    plans = build_plans(select_samples(load_samples(spec.data), spec), spec)
    counter = chars_counter()
    return {p.name: estimate_plan(p, counter, spec.generation()) for p in plans}


def test_reasoning_high_counts_each_request_at_its_cap_plus_the_headroom() -> None:
    none, high = estimates(spec_of()), estimates(spec_of(reasoning_effort="high"))
    assert set(none) == set(DOCUMENTED_CAP)
    for task, cap in DOCUMENTED_CAP.items():
        plain, reasoned = none[task], high[task]
        assert plain.requests == reasoned.requests > 0
        assert plain.prompt_tokens == reasoned.prompt_tokens
        assert plain.max_output_tokens == plain.requests * cap
        ratio = reasoned.max_output_tokens / plain.max_output_tokens
        assert ratio == (cap + DOCUMENTED_HEADROOM["high"]) / cap, task


def test_max_tokens_replaces_every_cap_headroom_included() -> None:
    for task, row in estimates(spec_of(reasoning_effort="high", max_tokens=4000)).items():
        assert row.max_output_tokens == row.requests * 4000, task


def test_a_judge_is_counted_at_its_own_reasoning_cap() -> None:
    spec = validate_spec({"model": "baseline/random", "data": "demo", "tasks": "er,vp"})
    plans = build_plans(select_samples(load_samples(spec.data), spec), spec)
    counter = chars_counter()
    plain = JudgeSpec(name="openai/gpt-4.1")
    low = JudgeSpec(name="openai/gpt-4.1", reasoning_effort="low")
    a = estimate_judge(plain.name, plans, counter, params=judge_params(plain))
    b = estimate_judge(low.name, plans, counter, params=judge_params(low))
    asked = a.requests + a.reasks
    assert asked > 0 and a.max_output_tokens == asked * JUDGE_CAP
    assert b.max_output_tokens == asked * (JUDGE_CAP + DOCUMENTED_HEADROOM["low"])


def all_row(output: str) -> list[str]:
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]|\s{2,}", line) if c.strip()]
        if cells and cells[0] == "all":
            return cells
    raise AssertionError(output)


def test_the_cli_names_the_cap_and_prices_it() -> None:
    runner = CliRunner(env={"COLUMNS": "120"})  # the table in one piece
    base = ["estimate", "--model", MODEL, "--data", "demo", "--tasks", "itp"]
    base += ["--price-in", "0", "--price-out"]
    plain = runner.invoke(app, [*base, "1000000"], catch_exceptions=False)
    high = runner.invoke(app, [*base, "1000000", "--reasoning-effort", "high"], catch_exceptions=False)
    capped = runner.invoke(app, [*base, "1000000", "--max-tokens", "4000"], catch_exceptions=False)
    assert plain.exit_code == high.exit_code == capped.exit_code == 0, high.output
    # the lines wrap at the terminal's width
    assert "each task's own cap" in " ".join(plain.output.split())
    assert "16,384 tokens of reasoning headroom" in " ".join(high.output.split())
    assert "max_tokens 4,000 for every request" in " ".join(capped.output.split())
    requests = int(all_row(plain.output)[2])
    # output priced at $1 per token: the cost is the output tokens counted
    assert float(all_row(plain.output)[5]) == requests * DOCUMENTED_CAP["itp"]
    assert float(all_row(high.output)[5]) == requests * (DOCUMENTED_CAP["itp"] + DOCUMENTED_HEADROOM["high"])
    assert float(all_row(capped.output)[5]) == requests * 4000
