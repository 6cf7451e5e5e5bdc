"""What a run needs before it starts, besides its model: its judges' endpoints and settings, its budget.

``rescue-bench run`` and each run of a study (``rescue-bench sweep``) take these from here, so a study's
run is the run that ``rescue-bench run --spec`` of the same spec would make: judges share the candidate's
endpoint when behind the same provider (:func:`~rescue_bench.judge.after_run.judge_endpoint`), each billed
judge gets its guard on the run's one budget at its own prices, and a budget needs prices.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from rescue_bench.errors import ConfigError
from rescue_bench.judge.after_run import JudgeSettings, fetch_bertscore, judge_endpoint
from rescue_bench.judge.bertscore import DEFAULT_MODEL
from rescue_bench.models.base import check_settings
from rescue_bench.models.registry import get_model, has_endpoint, is_billed
from rescue_bench.pricing import (
    Budget,
    Priced,
    Prices,
    has_entry,
    load_prices,
    make_counter,
    spent_so_far,
    table_prices,
)
from rescue_bench.rundir import load_judging, read_requests
from rescue_bench.spec import RunSpec

__all__ = [
    "judge_budgets",
    "judge_settings",
    "make_prices",
    "price_source",
    "run_budget",
    "spec_prices",
    "with_judges",
]


def with_judges(spec: RunSpec) -> RunSpec:
    """The spec with each judge's endpoint resolved (:func:`judge_endpoint`), checked before anything is sent.

    A baseline has no endpoint: with judges, its --base-url / --api-key-env are the judges'.
    """
    model = spec.model
    judges = []
    for judge in spec.judges:
        url, env = judge_endpoint(
            model.name, judge.name, model.base_url, model.api_key_env, judge.base_url, judge.api_key_env
        )
        judges.append(judge.model_copy(update={"base_url": url, "api_key_env": env}))
    if judges and not has_endpoint(model.name):
        model = model.model_copy(update={"base_url": None, "api_key_env": None})
    return spec.model_copy(update={"judges": tuple(judges), "model": model})


def judge_settings(spec: RunSpec, budget: Budget | None, out: Path) -> JudgeSettings:
    """The judge settings; each judge's provider is built once, so a missing key stops the run now.

    With a budget, each judge gets its guard on the run's one budget, at its own prices.
    """
    for judge in spec.judges:
        model = get_model(judge.name, base_url=judge.base_url, api_key_env=judge.api_key_env)
        asyncio.run(model.aclose())
        if not model.capabilities.reads_prompts:
            raise ConfigError(f"--judge {judge.name}: a judge must be a chat model, such as openai/gpt-4o")
        check_settings(model, judge.generation())
    settings = replace(
        bertscore_settings(spec),
        judges=spec.judges,
        engine=spec.engine,
        budgets=judge_budgets(spec, budget, out),
        judge_repeats=spec.judge_repeats,
    )
    # A missing extra or backbone asked for (--bertscore, --bertscore-model) fails now, not after the run.
    fetch_bertscore(settings, spec.tasks)
    return settings


def bertscore_settings(spec: RunSpec) -> JudgeSettings:
    """The spec's BERTScore choice as judge settings: a named backbone (``bertscore_model``) counts as asked
    for, unless ``bertscore`` is false."""
    asked = spec.bertscore if spec.bertscore is False or spec.bertscore_model is None else True
    return JudgeSettings(bertscore=asked, bertscore_model=spec.bertscore_model or DEFAULT_MODEL)


def judge_budgets(spec: RunSpec, budget: Budget | None, out: Path) -> dict[str, Budget]:
    """Each billed judge's guard on the run's budget, counting what it spent in earlier passes
    (judging.json); a judge whose provider declares no bill (``local/``) is not guarded."""
    if budget is None:
        return {}
    earlier = load_judging(out).counts if out.is_dir() else {}
    guards = {}
    for judge in (judge for judge in spec.judges if is_billed(judge.name)):
        prices = spec_prices(spec, judge.name)
        if prices is None:  # never the model's prices: a judge's cost must be counted at its own
            raise ConfigError(
                f"--budget needs prices for the judge {judge.name}: give price_in/price_out in its "
                "[[judges]] table (--spec FILE) or its entry in --prices FILE"
            )
        used = earlier.get(judge.name)
        spent = prices.cost(used.usage.prompt_tokens, used.usage.completion_tokens) if used else 0.0
        guards[judge.name] = budget.share(prices, make_counter(judge.name), spent=spent)
    return guards


def spec_prices(spec: RunSpec, model: str | None = None) -> Prices | None:
    """The prices of the spec's model, or of ``model`` (a judge); ``None`` when unknown
    (:func:`price_source` says where they come from)."""
    return price_source(spec, model).prices


def price_source(spec: RunSpec, judge: str | None = None) -> Priced:
    """The prices of the spec's model, or of the judge named ``judge``, and where they come from.

    The model: ``--price-in``/``--price-out``, else its ``--prices`` file entry (or the file's one
    entry), else the list-price table; through the Batch API (``--batch``) at batch prices. A judge: its
    own ``price_in``/``price_out`` (its ``[[judges]]`` table in a spec or study file), else its keyed
    ``--prices`` entry, else the table. A price is never borrowed from another model: with none of these it
    is unknown.
    """
    budget = spec.budget
    if judge is None:
        name = spec.model.name
        if not is_billed(name):
            found = Priced(name, Prices(0.0, 0.0), "not billed: it runs on this machine")
        elif budget.price_in is not None and budget.price_out is not None:
            found = Priced(name, Prices(budget.price_in, budget.price_out), "--price-in/--price-out")
        elif budget.prices is not None:
            found = Priced(name, load_prices(budget.prices, name), f"--prices {budget.prices.name}")
        else:
            found = table_prices(name)
        if spec.batch and found.prices is not None:
            return Priced(name, found.prices.batched(), found.source + ", at Batch API prices")
        return found
    if not is_billed(judge):
        return Priced(judge, Prices(0.0, 0.0), "not billed: it runs on this machine")
    entry = next((j for j in spec.judges if j.name == judge), None)
    if entry is not None and entry.price_in is not None and entry.price_out is not None:
        return Priced(judge, Prices(entry.price_in, entry.price_out), "its [[judges]] price_in/price_out")
    if budget.prices is not None and has_entry(budget.prices, judge):
        return Priced(judge, load_prices(budget.prices, judge), f"--prices {budget.prices.name}")
    return table_prices(judge)


def make_prices(
    model: str, price_in: float | None, price_out: float | None, prices: Path | None
) -> Prices | None:
    """The prices of ``model``: from the ``prices`` file, or ``price_in``/``price_out`` (given together)."""
    if prices is not None:
        if price_in is not None or price_out is not None:
            raise ConfigError("give either --prices or --price-in/--price-out, not both")
        return load_prices(prices, model)
    if (price_in is None) != (price_out is None):
        raise ConfigError("--price-in and --price-out go together")
    return None if price_in is None or price_out is None else Prices(price_in, price_out)


def run_budget(spec: RunSpec, out: Path) -> Budget | None:
    """The run's budget guard, counting what its directory already spent (``None`` without a budget)."""
    if spec.budget.usd is None:
        return None
    prices = spec_prices(spec)
    if prices is None:
        raise ConfigError("--budget needs prices: --price-in and --price-out, or --prices FILE")
    spent = spent_so_far(read_requests(out), prices) if out.is_dir() else 0.0
    return Budget(spec.budget.usd, prices, make_counter(spec.model.name), spent=spent)
