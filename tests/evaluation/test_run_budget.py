"""The budget guards a model by what its provider declares (``Capabilities.billed``): plugins as presets."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.models.test_registry import install_plugin

import rescue_bench
from rescue_bench.errors import ConfigError
from rescue_bench.evaluation.setup import judge_budgets, run_budget
from rescue_bench.models.registry import is_billed
from rescue_bench.pricing import Prices
from rescue_bench.spec import RunSpec

METERED = '''
from rescue_bench.models.base import Capabilities
from rescue_bench.records import Reply

ASKED = []


class _Meter:
    """Answers every request with an empty object, and counts the requests."""

    def __init__(self, model, options):
        self.name = f"{self.prefix}/{model}"

    def identity(self):
        return {"provider": self.prefix, "model": self.name}

    def prepare(self, instances):
        pass

    async def complete(self, request, params):
        ASKED.append(self.name)
        return Reply(text="{}")

    async def aclose(self):
        pass


class Paid(_Meter):
    prefix = "paid"
    capabilities = Capabilities(cacheable=False, has_endpoint=False, batch_export=False, billed=True)


class Free(_Meter):
    prefix = "free"
    capabilities = Capabilities(cacheable=False, has_endpoint=False, batch_export=False)
'''


@pytest.fixture
def asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two installed provider plugins, ``paid/`` (declared billed) and ``free/``; the names asked."""
    install_plugin(tmp_path, "paid = echo_plugin:Paid\nfree = echo_plugin:Free", module=METERED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import echo_plugin  # type: ignore[import-not-found]  # the module the fixture just installed

    asked: list[str] = echo_plugin.ASKED
    return asked


TINY = {"usd": 0.000001, "price_in": 1000.0, "price_out": 1000.0}
"""A budget far below one request's worst case."""


def spend(model: str, out: Path) -> rescue_bench.RunOutcome:
    spec = RunSpec.model_validate(
        {
            "model": model,
            "tasks": ["itp"],
            "data": "demo",
            "limit_samples": 1,
            "bertscore": False,
            "engine": {"cache": False, "max_retries": 0},
            "budget": TINY,
        }
    )
    return rescue_bench.run(spec, out=out, quiet=True)


def test_a_plugin_declared_billed_is_stopped_by_the_budget(asked: list[str], tmp_path: Path) -> None:
    assert is_billed("paid/m") and is_billed("openai/gpt-4o")
    outcome = spend("paid/m", tmp_path / "paid")
    assert outcome.status == "stopped" and outcome.reason and "budget" in outcome.reason
    assert asked == []  # stopped before the first request, as a preset's model is


def test_a_plugin_that_declares_no_bill_is_not_guarded(asked: list[str], tmp_path: Path) -> None:
    assert not is_billed("free/m")
    outcome = spend("free/m", tmp_path / "free")
    assert outcome.status != "stopped" and not (outcome.reason and "budget" in outcome.reason)
    assert asked and set(asked) == {"free/m"}


@pytest.mark.usefixtures("asked")
def test_only_the_judges_declared_billed_get_a_guard(tmp_path: Path) -> None:
    judges = [{"name": name, "price_in": 1.0, "price_out": 1.0} for name in ("paid/j", "free/j", "vllm/j")]
    spec = RunSpec.model_validate(
        {"model": "baseline/random", "tasks": ["er"], "judges": judges, "budget": TINY}
    )
    out = tmp_path / "not-yet"
    assert sorted(judge_budgets(spec, run_budget(spec, out), out)) == ["paid/j", "vllm/j"]


def test_a_judge_is_never_guarded_at_the_models_prices(tmp_path: Path) -> None:
    # --price-in/--price-out price the model: a judge with no price of its own stops the run before it starts.
    spec = RunSpec.model_validate(
        {"model": "openai/x", "tasks": ["er"], "judges": [{"name": "vllm/j"}], "budget": TINY}
    )
    out = tmp_path / "not-yet"
    with pytest.raises(ConfigError, match="needs prices for the judge vllm/j"):
        judge_budgets(spec, run_budget(spec, out), out)
    priced = spec.model_copy(
        update={"judges": (spec.judges[0].model_copy(update={"price_in": 3.0, "price_out": 4.0}),)}
    )
    guard = judge_budgets(priced, run_budget(priced, out), out)["vllm/j"]
    assert guard.prices == Prices(3.0, 4.0)
