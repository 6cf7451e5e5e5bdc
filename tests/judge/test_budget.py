"""``--budget`` covers the judge pass: it stops inside it, records the judge's spend, and resumes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.test_run_judge import grade, run_cli
from tests.fakes.openai_server import FakeOpenAIServer

from rescue_bench.data.load import load_samples
from rescue_bench.engine.plans import build_plans
from rescue_bench.judge import rubric
from rescue_bench.judge.estimate import stand_in_records
from rescue_bench.judge.runner import plan_groups
from rescue_bench.pricing import Prices, make_counter
from rescue_bench.spec import RunSpec

JUDGE = "vllm/judge"
PRICES = Prices(1000.0, 1000.0)  # $0.001 per token: small runs spend whole dollars


def worst_judge_request() -> tuple[float, int]:
    """The largest worst case of one first judge request on the demo's ER instances, and the requests."""
    plans = build_plans(load_samples("demo"), RunSpec(model="baseline/random", tasks=["er"]))
    groups, _ = plan_groups(stand_in_records(plans), done=frozenset())
    counter = make_counter(JUDGE)
    requests = [rubric.render(items) for items in groups]
    worst = max(PRICES.cost(counter.request_tokens(r), r.max_tokens) for r in requests)
    return worst, len(requests)


def test_the_budget_stops_inside_the_judge_pass_and_the_rerun_finishes(tmp_path: Path) -> None:
    worst, groups = worst_judge_request()
    # Room for the first judge request; its reply (its prompt, at the fake's ~chars/4 usage) leaves too little
    # for the next one's worst case, which is mostly its 1,800-token output cap.
    budget = 1.1 * worst
    out = tmp_path / "run"
    args = ["--model", "baseline/random", "--tasks", "er", "--judge", JUDGE, "--no-bertscore"]
    # The judge's own prices: never the model's (--price-in/--price-out price the model alone).
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({JUDGE: {"input": 1000, "output": 1000}}))
    args += ["--concurrency", "1", "--prices", str(prices), "--out", str(out)]
    with FakeOpenAIServer(grade) as server:
        stopped = run_cli(*args, "--base-url", server.base_url, "--budget", f"{budget:.4f}")
        asked = server.count
        judging = json.loads((out / "judging.json").read_text())
        judged = len((out / "judgments.jsonl").read_text().splitlines())
        engine_scores = json.loads((out / "scores.json").read_text())
        finished = run_cli(*args, "--base-url", server.base_url, "--budget", "1000")
        resumed = server.count - asked
    assert groups > 3
    assert stopped.exit_code == 3, stopped.output
    assert "judge pass stopped: budget" in stopped.output
    assert 1 <= asked < groups
    counts = judging["counts"][JUDGE]
    usage = counts["usage"]
    spent = PRICES.cost(usage["prompt_tokens"], usage["completion_tokens"])
    assert counts["requests"] == asked and usage["prompt_tokens"] > 0  # the judge's spend is recorded
    assert 0 < spent <= budget
    instances = engine_scores["er"]["all"]["n"]
    assert 0 < judged == counts["sent"] == counts["valid"] < instances
    assert engine_scores["er"]["all"].get("llm") is None  # a stopped pass leaves the engine's scores alone
    # The same command with room to spare judges only what is left.
    assert finished.exit_code == 0, finished.output
    assert resumed == groups - asked
    scores = json.loads((out / "scores.json").read_text())
    assert scores["er"]["all"]["llm"] is not None


def test_the_model_spend_counts_against_the_judge_pass(tmp_path: Path) -> None:
    """Whichever part spends the budget: what the model spent leaves no room for a judge request."""
    worst, _ = worst_judge_request()
    out = tmp_path / "run"
    args = ["--model", "vllm/cand", "--tasks", "er", "--limit-samples", "2", "--no-bertscore"]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({name: {"input": 1000, "output": 1000} for name in (JUDGE, "vllm/cand")}))
    args += ["--concurrency", "1", "--prices", str(prices), "--out", str(out)]
    with FakeOpenAIServer(grade) as judges, FakeOpenAIServer() as model:
        first = run_cli(*args, "--base-url", model.base_url, "--budget", "1000")
        assert first.exit_code == 0, first.output
        requests = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
        model_spent = sum(
            PRICES.cost(r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) for r in requests
        )
        assert (
            model_spent > worst / 2
        )  # without the model's spend, the budget below would fit a judge request
        judged = [*args, "--base-url", model.base_url, "--judge", JUDGE, "--judge-base-url", judges.base_url]
        stopped = run_cli(*judged, "--budget", f"{model_spent + worst / 2:.4f}")
        assert judges.count == 0
        finished = run_cli(*judged, "--budget", "1000")
        assert judges.count > 0 and model.count == len(requests)  # the model was never asked again
    assert stopped.exit_code == 3 and "judge pass stopped: budget" in stopped.output, stopped.output
    assert finished.exit_code == 0, finished.output
