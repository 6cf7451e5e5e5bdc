"""What each run of a study needs before it starts: its judges' endpoint, its budget, its engine settings.

These follow ``rescue-bench run`` (``cli/run.py``) rule for rule, so that a study's run is the run that
``rescue-bench run --spec`` of the same spec would make: judges share the candidate's endpoint when behind
the same provider (:func:`~rescue_bench.judge.after_run.judge_endpoint`), a budget needs prices, and the
engine's in-flight limit is the model's ``concurrency`` when given.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from rescue_bench.engine.estimate import Budget, make_counter
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.run import engine_options_of
from rescue_bench.errors import ConfigError
from rescue_bench.judge.after_run import JudgeSettings, has_endpoint, judge_endpoint, wants_bertscore
from rescue_bench.models.registry import get_model
from rescue_bench.pricing import Prices, load_prices, spent_so_far
from rescue_bench.rundir import read_requests
from rescue_bench.spec import RunSpec


def with_judges(spec: RunSpec) -> RunSpec:
    """The spec with each judge's endpoint resolved; a baseline's endpoint flags are its judges'."""
    model = spec.model
    judges = []
    for judge in spec.judges:
        url, env = judge_endpoint(
            model.name, judge.name, model.base_url, model.api_key_env, judge.base_url, judge.api_key_env
        )
        judges.append(judge.model_copy(update={"base_url": url, "api_key_env": env}))
    if len({(j.base_url, j.api_key_env) for j in judges}) > 1:
        raise ConfigError("judges behind different providers need one judge base_url (one endpoint)")
    if judges and not has_endpoint(model.name):
        model = model.model_copy(update={"base_url": None, "api_key_env": None})
    return spec.model_copy(update={"judges": tuple(judges), "model": model})


def judge_settings(spec: RunSpec) -> JudgeSettings:
    """The judge pass of a run; each judge's provider is built once, so a missing key stops now."""
    for judge in spec.judges:
        provider = get_model(judge.name, base_url=judge.base_url, api_key_env=judge.api_key_env)
        asyncio.run(provider.aclose())
        if not provider.capabilities.has_endpoint:
            raise ConfigError(f"judges: {judge.name}: a judge must be a chat model, such as openai/gpt-4o")
    first = spec.judges[0] if spec.judges else None
    engine = spec.engine
    settings = JudgeSettings(
        tuple(j.name for j in spec.judges),
        first.base_url if first else None,
        first.api_key_env if first else None,
        spec.bertscore,
        concurrency=(first.concurrency if first else None) or engine.concurrency,
        timeout=engine.timeout,
        max_retries=engine.max_retries,
        use_cache=engine.cache,
    )
    wants_bertscore(settings, spec.tasks)  # a missing extra asked for fails now, not after the run
    return settings


def prices_of(spec: RunSpec) -> Prices | None:
    """The model's prices: the ``budget.prices`` file, or ``budget.price_in`` / ``price_out``."""
    budget = spec.budget
    if budget.prices is not None:
        return load_prices(budget.prices, spec.model.name)
    if budget.price_in is None or budget.price_out is None:
        return None
    return Prices(budget.price_in, budget.price_out)


def budget_of(spec: RunSpec, out: Path) -> Budget | None:
    """The run's budget guard, counting what its directory already spent (``None`` without a budget)."""
    if spec.budget.usd is None:
        return None
    prices = prices_of(spec)
    if prices is None:
        raise ConfigError("budget.usd needs prices: budget.price_in and price_out, or budget.prices")
    spent = spent_so_far(read_requests(out), prices) if out.is_dir() else 0.0
    return Budget(spec.budget.usd, prices, make_counter(spec.model.name), spent=spent)


def engine_of(spec: RunSpec) -> EngineOptions:
    """The engine settings, with the model's own in-flight limit when it has one."""
    options = engine_options_of(spec)
    return replace(options, concurrency=spec.model.concurrency or options.concurrency)
