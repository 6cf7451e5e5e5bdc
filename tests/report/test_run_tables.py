"""Tables of how each run went (judges, failures, usage), from hand-made run data."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from tests.report.test_tables import SCORES, sample_run

from rescue_bench.errors import ConfigError
from rescue_bench.pricing import load_prices
from rescue_bench.report import configuration, run_tables
from rescue_bench.rundir import RunData


def test_failures_usage_and_config() -> None:
    fail = {r[1]: r for r in run_tables.failures([sample_run()]).rows}
    assert fail["ITP"][2:5] == (10, 9, 1) and fail["ITP"][5].text() == "10.0"
    assert fail["ER"][-1] == 2 and fail["ITP"][-1] is None
    use = run_tables.usage([sample_run()]).rows
    assert use[0][1:5] == ("ITP", 3, 100, 7) and use[1][1] == "judge openai/j" and use[1][3] == 50
    differ, shared = configuration.config([sample_run()])
    settings = dict(shared.rows)
    assert (
        not differ.rows and settings["model.provider"] == "openai" and "counts.itp.requests" not in settings
    )


def test_cost_from_prices_when_not_recorded(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text('{"openai/x": {"input": 2.5, "output": 10}, "openai/j": {"input": 1, "output": 2}}')
    rows = run_tables.usage([sample_run()], partial(load_prices, prices)).rows
    assert rows[0][-1].value == pytest.approx((100 * 2.5 + 7 * 10) / 1e6)
    assert rows[1][-1].value == pytest.approx((50 * 1 + 5 * 2) / 1e6)
    assert run_tables.usage([sample_run()]).rows[0][-1] is None
    prices.write_text('{"openai/j": {"input": 1, "output": 2}}')
    with pytest.raises(ConfigError, match="no entry for 'openai/x'"):
        run_tables.usage([sample_run()], partial(load_prices, prices))


def test_judges_table_with_and_without_agreement() -> None:
    agreement = {"er": {"n_items": 12, "alpha_ordinal": 0.61234, "exact_agreement": 0.5, "mae": 0.75}}
    scores = {**SCORES, "_meta": {"judges": ["a/x", "b/y"], "judge_agreement": agreement}}
    run = RunData.of(Path("r"), {"model": {"name": "m/1"}}, [], scores=scores)
    (row,) = run_tables.judges([run]).rows
    assert row[:4] == ("m/1", "ER", "a/x, b/y", 12)
    assert (row[4].text(), row[5].text(), row[6].text()) == ("0.612", "50.0", "0.750")
    assert run_tables.judges([sample_run()]).rows == (("openai/x", "ER, VP", "none", None, None, None, None),)
