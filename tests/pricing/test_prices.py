"""A prices file holds finite prices >= 0: anything else is a one-line error naming the file and the model,
before a run starts (a negative or infinite price would keep ``--budget`` from ever stopping)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli.main import app
from rescue_bench.errors import ConfigError
from rescue_bench.pricing import Prices, load_prices


@pytest.mark.parametrize(
    "entry",
    [
        '{"input": -1.0, "output": 2.0}',
        '{"input": 1.0, "output": Infinity}',
        '{"input": NaN, "output": 2.0}',
        '{"input": "2.5", "output": 2.0}',
        '{"input": true, "output": 2.0}',
        '{"input": 1e999, "output": 2.0}',
        '{"input": 1.0}',
        "3",
    ],
)
def test_a_price_that_is_not_a_finite_number_is_refused(tmp_path: Path, entry: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(f'{{"openai/gpt-4o": {entry}}}')
    with pytest.raises(ConfigError) as caught:
        load_prices(path, "openai/gpt-4o")
    assert str(caught.value) == (
        f"--prices: the entry for 'openai/gpt-4o' in {path} needs numbers 'input' and 'output', finite and "
        ">= 0 (US dollars per million tokens)"
    )


def test_an_entry_may_carry_a_note_beside_its_prices(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"openai/gpt-4o": {"input": 2.5, "output": 10, "note": "list price"}}')
    assert load_prices(path, "openai/gpt-4o") == Prices(2.5, 10.0)


def test_good_prices_load_and_a_bad_one_stops_a_run_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = tmp_path / "prices.json"
    path.write_text('{"input": 0, "output": 2}')
    assert load_prices(path, "openai/gpt-4o") == Prices(0.0, 2.0)
    path.write_text('{"input": -5, "output": 2}')
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", "--model", "openai/gpt-4o", "--tasks", "itp", "--budget", "1", "--prices", str(path),
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2 and result.output.startswith(
        "error: --prices: the entry for 'openai/gpt-4o'"
    )
    assert not out.exists()
