"""CLI commands: ``rescue-bench run`` and ``estimate`` (``cache`` and ``batch`` live in their own modules).

Both take every run flag (:mod:`rescue_bench.cli.run_flags`), ``--spec FILE.toml`` and ``--print-spec``.

Exit codes of ``run`` and ``batch import``: 0 when the run finished (failed instances are counted, not fatal),
1 on an error, 2 on a usage error, 3 when ``--budget`` stopped the run (re-run the same command to continue),
130 when interrupted (resumable too).
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from rescue_bench.cli.run_flags import SpecCommand, flag_values, make_spec, print_spec
from rescue_bench.engine.estimate import Budget, TaskEstimate, make_counter
from rescue_bench.engine.run import RunOptions, RunResult
from rescue_bench.errors import ConfigError
from rescue_bench.judge.after_run import JudgeSettings, has_endpoint, judge_endpoint, wants_bertscore
from rescue_bench.pricing import Prices, load_prices, spent_so_far
from rescue_bench.rundir import read_requests
from rescue_bench.spec import RunSpec, default_out
from rescue_bench.tasks import paper_columns

__all__ = ["make_prices", "register", "report_result", "summary_table"]
EXIT_STOPPED = 3
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]
OutDir = Annotated[Path | None, typer.Option("--out", help="Run directory (default: runs/<model>_<data>).")]


def run(ctx: typer.Context, out: OutDir = None, quiet: Quiet = False) -> None:
    """Run RESCUE-Bench against a model; re-running the same command resumes.

    With --judge, the ER/VP predictions are judged after the run, as `rescue-bench score` does.
    """
    from rescue_bench.engine.run import run_benchmark

    flags = flag_values(ctx)
    spec = with_judges(with_out(make_spec(flags, out=out)))
    if flags.print_spec:
        print_spec(spec)
        return
    assert spec.out is not None
    judging = _judging(spec)
    options = RunOptions(quiet=quiet, budget=_budget(spec, spec.out))
    # SIGTERM (a job scheduler, `timeout`) stops the run like Ctrl-C: records closed, run.json "stopped".
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        result = run_benchmark(spec, spec.out, options)
        if result.status == "finished":
            result = _judge(result, spec, judging, quiet)
    except KeyboardInterrupt:
        typer.echo(f"interrupted; re-run the same command to resume {spec.out}", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    report_result(result, spec.model.name)


def with_out(spec: RunSpec) -> RunSpec:
    """The spec with its run directory (``runs/<model>_<data>...`` when none is given)."""
    return spec if spec.out is not None else spec.model_copy(update={"out": default_out(spec)})


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
    if len({(j.base_url, j.api_key_env) for j in judges}) > 1:
        raise ConfigError("--judge models behind different providers need --judge-base-url (one endpoint)")
    if judges and not has_endpoint(model.name):
        model = model.model_copy(update={"base_url": None, "api_key_env": None})
    return spec.model_copy(update={"judges": tuple(judges), "model": model})


def _judging(spec: RunSpec) -> JudgeSettings:
    """The judge settings; each judge's provider is built once, so a missing key stops the run now."""
    from rescue_bench.models.registry import get_model

    first = spec.judges[0] if spec.judges else None
    for judge in spec.judges:
        model = get_model(judge.name, base_url=judge.base_url, api_key_env=judge.api_key_env)
        asyncio.run(model.aclose())
        if not model.capabilities.reads_prompts:
            raise ConfigError(f"--judge {judge.name}: a judge must be a chat model, such as openai/gpt-4o")
    engine = spec.engine
    settings = JudgeSettings(
        tuple(j.name for j in spec.judges),
        first.base_url if first else None,
        first.api_key_env if first else None,
        spec.bertscore,
        concurrency=engine.concurrency,
        timeout=engine.timeout,
        max_retries=engine.max_retries,
        use_cache=engine.cache,
    )
    wants_bertscore(settings, spec.tasks)  # a missing extra asked for by --bertscore fails now, not later
    return settings


def _judge(result: RunResult, spec: RunSpec, settings: JudgeSettings, quiet: bool) -> RunResult:
    from rescue_bench.judge.after_run import score_after_run

    if settings.judges and not quiet:
        typer.echo(f"judging ER/VP with {', '.join(settings.judges)}", err=True)
    scores = asyncio.run(
        score_after_run(result.out, spec.tasks, settings, lambda m: typer.echo(f"warning: {m}", err=True))
    )
    return result if scores is None else replace(result, scores=scores)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def spec_prices(spec: RunSpec) -> Prices | None:
    """The prices of the spec's model (``--prices`` file, or ``--price-in``/``--price-out``), if any."""
    budget = spec.budget
    return make_prices(spec.model.name, budget.price_in, budget.price_out, budget.prices)


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


def _budget(spec: RunSpec, out: Path) -> Budget | None:
    if spec.budget.usd is None:
        return None
    prices = spec_prices(spec)
    if prices is None:
        raise ConfigError("--budget needs prices: --price-in and --price-out, or --prices FILE")
    spent = spent_so_far(read_requests(out), prices)
    return Budget(spec.budget.usd, prices, make_counter(spec.model.name), spent=spent)


def report_result(result: RunResult, model: str) -> None:
    """The scores table, the invalid predictions and the run directory; exit 3 for a stopped run."""
    console = Console(width=None if Console().is_terminal else 200)
    if result.scores is not None:
        console.print(summary_table(result.scores, model))
    invalid = {t: (c["invalid"], c["instances"]) for t, c in result.counts.items() if c["invalid"]}
    if invalid:
        listed = ", ".join(f"{t} {bad}/{n}" for t, (bad, n) in invalid.items())
        console.print(f"invalid predictions (scored as misses): {listed}")
    console.print(f"run directory: {result.out}")
    if result.status == "stopped":
        typer.echo(f"stopped: {result.stop_reason or 'not finished'}", err=True)
        raise typer.Exit(EXIT_STOPPED)


def summary_table(scores: dict[str, Any], model: str) -> Table:
    """The paper's Table 5 layout, one row per scope (Both, Couple, Family); '-' for a missing value."""
    table = Table(title=f"RESCUE-Bench: {model}")
    table.add_column("Scope")
    columns = paper_columns()
    for _, column in columns:
        table.add_column(column.header, justify="right")
    for scope, label in (("all", "Both"), ("couple", "Couple"), ("family", "Family")):
        if not any(scope in (scores.get(t) or {}) for t, _ in columns):
            continue
        cells = []
        for task, column in columns:
            value = ((scores.get(task) or {}).get(scope) or {}).get(column.metric)
            cells.append("-" if value is None else f"{value * column.scale:.{column.decimals}f}")
        table.add_row(label, *cells)
    return table


def estimate(ctx: typer.Context) -> None:
    """Requests, prompt tokens and (with prices) cost per task, before spending anything."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.estimate import estimate_requests
    from rescue_bench.engine.manifest import build_plans, select_samples
    from rescue_bench.engine.video import check_video_config, clip_coverage

    flags = flag_values(ctx)
    spec = make_spec(flags)
    if flags.print_spec:
        print_spec(spec)
        return
    check_video_config(spec)
    price = spec_prices(spec)
    plans = build_plans(select_samples(load_samples(spec.data), spec), spec)
    counter = make_counter(spec.model.name)
    rows = [
        estimate_requests(p.name, len(p.instances), [p.task.render(b, p.cfg) for b in p.batches], counter)
        for p in plans
    ]
    total = sum(c for r in rows if (c := r.cost(price)) is not None) if price else None
    _print_estimate(rows, price, total, f"Estimate for {spec.model.name} (tokenizer: {counter.name})")
    typer.echo("Retries and single re-asks of missing items come on top; cached requests cost nothing.")
    if spec.judges:
        typer.echo("Judge requests (--judge) are not in the estimate.")
    coverage = clip_coverage(spec, plans)
    if coverage is not None:
        typer.echo(
            f"video: {coverage.clips} clips attached over {coverage.requests} requests; "
            f"{coverage.unusable} instances lack the clip their task needs; clip and frame tokens are not "
            "counted above"
        )
    budget = spec.budget.usd
    if budget is not None and total is not None and total > budget:
        typer.echo(
            f"the worst case (${total:.2f}) exceeds --budget ${budget:.2f}: the run would stop before the end"
        )


def _print_estimate(rows: list[TaskEstimate], price: Prices | None, total: float | None, title: str) -> None:
    table = Table(title=title)
    headers = ("Task", "Instances", "Requests", "Prompt tokens", "Max output tokens", "Cost (USD, at most)")
    for header in headers:
        table.add_column(header, justify="left" if header == "Task" else "right")
    for r in rows:
        cost = r.cost(price)
        table.add_row(
            r.task,
            str(r.instances),
            str(r.requests),
            f"{r.prompt_tokens:,}",
            f"{r.max_output_tokens:,}",
            "-" if cost is None else f"{cost:.4f}",
        )
    table.add_row(
        "all",
        str(sum(r.instances for r in rows)),
        str(sum(r.requests for r in rows)),
        f"{sum(r.prompt_tokens for r in rows):,}",
        f"{sum(r.max_output_tokens for r in rows):,}",
        "-" if total is None else f"{total:.4f}",
        style="bold",
    )
    Console(width=None if Console().is_terminal else 160).print(table)


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``estimate`` to the root app."""
    app.command("run", cls=SpecCommand)(run)
    app.command("estimate", cls=SpecCommand)(estimate)
