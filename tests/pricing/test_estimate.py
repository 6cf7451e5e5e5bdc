"""Token counting, prices and the budget guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from rescue_bench.errors import ConfigError
from rescue_bench.pricing import (
    Budget,
    BudgetExceeded,
    Prices,
    chars_counter,
    estimate_requests,
    load_prices,
    make_counter,
    spent_so_far,
)
from rescue_bench.records import Request, Usage
from rescue_bench.rundir import RequestLine

REQUEST = Request(
    task="er",
    messages=({"role": "user", "content": "x" * 400},),
    response_schema={},
    instance_ids=("a",),
    max_tokens=100,
)


def test_counter_names_what_it_used() -> None:
    counter = make_counter("openai/gpt-4o")
    assert counter.name
    if counter.name.startswith("chars/4"):
        assert not counter.exact
    else:  # a real BPE tokenizer: common words are single tokens
        assert counter.count("hello world") == 2
    assert chars_counter().request_tokens(REQUEST) == 3 + 4 + 100


def test_estimate_sums_requests() -> None:
    est = estimate_requests("er", 5, [REQUEST, REQUEST], chars_counter())
    assert (est.requests, est.prompt_tokens, est.max_output_tokens) == (2, 214, 200)
    assert est.cost(Prices(1.0, 2.0)) == pytest.approx((214 * 1 + 200 * 2) / 1e6)
    assert est.cost(None) is None


def test_prices_file_forms(tmp_path: Path) -> None:
    single = tmp_path / "one.json"
    single.write_text('{"input": 2.5, "output": 10}')
    assert load_prices(single, "openai/gpt-4o") == Prices(2.5, 10.0)
    table = tmp_path / "table.json"
    table.write_text(
        '{"openai/gpt-4o": {"input": 2.5, "output": 10}, "deepseek-chat": {"input": 0.3, "output": 1}}'
    )
    assert load_prices(table, "openai/gpt-4o") == Prices(2.5, 10.0)
    assert load_prices(table, "deepseek/deepseek-chat") == Prices(0.3, 1.0)
    with pytest.raises(ConfigError, match="no entry for 'vllm/x'"):
        load_prices(table, "vllm/x")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ConfigError, match="not readable JSON"):
        load_prices(tmp_path / "bad.json", "m/x")


def test_budget_reserves_the_worst_case_and_settles_actual_use() -> None:
    budget = Budget(1.0, Prices(1000.0, 1000.0), chars_counter())  # $0.001 per token
    reserved = budget.reserve(REQUEST)  # 207 tokens worst case
    assert reserved == pytest.approx(0.207)
    budget.settle(reserved, Usage(107, 10))
    assert budget.spent == pytest.approx(0.117) and budget.reserved == pytest.approx(0.0)
    for _ in range(4):
        budget.reserve(REQUEST)
    with pytest.raises(BudgetExceeded, match=r"budget \$1.00 reached"):
        budget.reserve(REQUEST)
    with pytest.raises(ConfigError):
        Budget(0, Prices(1, 1), chars_counter())


def test_spent_so_far_ignores_cached_replies() -> None:
    records = [
        RequestLine.from_json({"cached": False, "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}),
        RequestLine.from_json({"cached": True, "usage": {"prompt_tokens": 5000, "completion_tokens": 500}}),
    ]
    assert spent_so_far(records, Prices(1.0, 10.0)) == pytest.approx((1000 + 1000) / 1e6)


def test_estimate_warns_of_a_long_conversation_before_it_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    """W44: a conversation of thousands of rows makes every prompt long; the estimate says so first."""
    from typer.testing import CliRunner

    from rescue_bench.cli.main import app
    from rescue_bench.pricing import estimate

    monkeypatch.setattr(estimate, "LONG_CONVERSATION", 3)  # the demo's conversations stand in for long ones
    flags = ["--model", "baseline/random", "--data", "demo", "--tasks", "itp", "--limit-samples", "1"]
    result = CliRunner().invoke(app, ["estimate", *flags])
    assert result.exit_code == 0, result.output
    assert "warning: 1 conversation has more than 3 rows (" in result.output
    assert result.output.index("warning:") < result.output.index("Estimate for")
    assert estimate.long_conversation_note({"s": 3}) is None
