"""``estimate``: batch prices with ``--batch``; the judge pass (requests, bounded re-asks, tokens, cost)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.data.load import load_samples
from rescue_bench.judge.rubric import JUDGE_MAX_TOKENS
from rescue_bench.pricing import Prices
from rescue_bench.tasks import TASKS
from rescue_bench.tasks.base import TaskConfig

runner = CliRunner(env={"COLUMNS": "120"})  # each table in one piece (a narrower terminal splits the judges')
BASE = ["estimate", "--model", "openai/gpt-4o-mini", "--data", "demo", "--tasks", "er,vp,itp"]


def estimate(*args: str) -> str:
    result = runner.invoke(app, [*BASE, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def row(output: str, name: str) -> list[str]:
    """The cells of the table row whose first cell is ``name``."""
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]|\s{2,}", line) if c.strip()]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no row {name!r} in:\n{output}")


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_batch_prices_are_half_the_online_prices() -> None:
    online = row(estimate("--price-in", "1", "--price-out", "2"), "all")
    output = estimate("--price-in", "1", "--price-out", "2", "--batch")
    batched = row(output, "all")
    assert batched[:5] == online[:5]  # the same requests and tokens
    prompt, max_out = number(batched[3]), number(batched[4])
    assert number(batched[5]) == round(Prices(0.5, 1.0).cost(int(prompt), int(max_out)), 4)
    assert number(online[5]) == round(Prices(1.0, 2.0).cost(int(prompt), int(max_out)), 4)
    assert "Batch API prices" in output


def test_the_judge_pass_is_estimated_per_judge_with_its_own_prices(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    table = {"openai/gpt-4o-mini": {"input": 1, "output": 2}, "openai/gpt-4.1": {"input": 10, "output": 20}}
    prices.write_text(json.dumps(table))
    output = estimate("--judge", "openai/gpt-4.1", "--prices", str(prices))
    assert "not in the estimate" not in output
    judge = row(output, "openai/gpt-4.1")
    # One request per sample and judged task, at most 10 items each (counted here from the tasks' own build).
    cfg = TaskConfig()
    per_sample = Counter(
        (inst.sample_id, name)
        for sample in load_samples("demo")
        for name in ("er", "vp")
        for inst in TASKS[name].build(sample, cfg)
    )
    requests = sum(math.ceil(n / 10) for n in per_sample.values())
    assert number(judge[1]) == sum(per_sample.values())
    assert number(judge[2]) == number(judge[3]) == requests  # a re-ask per first request at most
    assert number(judge[5]) == 2 * requests * JUDGE_MAX_TOKENS
    assert number(judge[6]) == round(Prices(10, 20).cost(int(number(judge[4])), int(number(judge[5]))), 4)
    model = number(row(output, "all")[5])
    whole = re.search(r"judges included: at most \$([0-9.]+)", output)
    assert whole is not None and abs(float(whole.group(1)) - (model + number(judge[6]))) < 2e-4


def test_a_judge_without_a_price_leaves_its_cost_open(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai/gpt-4o-mini": {"input": 1, "output": 2}}))
    result = runner.invoke(app, [*BASE, "--judge", "openai/gpt-5.4", "--prices", str(prices)])
    assert result.exit_code == 0, result.output
    assert row(result.output, "openai/gpt-5.4")[6] == "-"
    assert "whole run, judges included: unknown" in result.output


def test_the_readme_example_prices_each_model_and_judge_at_its_own_prices() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("rescue-bench estimate "))
    args = command.split()[1:]
    args[args.index("--data") + 1] = "demo"  # the release is not shipped; the prices do not depend on it
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert (
        "price of openai/gpt-4o-mini: $0.15 in, $0.6 out per million tokens (--price-in/--price-out)" in out
    )
    # The judge is never priced at the model's rates: GPT-5.4 has no price here, so the total is unknown.
    assert "price of openai/gpt-5.4: price unknown (not in the price table)" in out
    assert "whole run, judges included: unknown" in out
    assert row(result.output, "openai/gpt-5.4")[6] == "-"


def test_a_judge_is_priced_from_its_own_entry_or_the_table() -> None:
    from rescue_bench.evaluation.setup import price_source
    from rescue_bench.spec import RunSpec

    judges = [{"name": "openai/gpt-5.4", "price_in": 5.0, "price_out": 15.0}, {"name": "openai/gpt-4o"}]
    spec = RunSpec.model_validate(
        {"model": "openai/gpt-4o-mini", "judges": judges, "budget": {"price_in": 9.0, "price_out": 9.0}}
    )
    own, table = price_source(spec, "openai/gpt-5.4"), price_source(spec, "openai/gpt-4o")
    assert own.prices == Prices(5.0, 15.0) and "[[judges]]" in own.source
    assert table.prices == Prices(2.5, 10.0) and table.source == "the toolkit's list-price table"
    assert price_source(spec).prices == Prices(9.0, 9.0)
