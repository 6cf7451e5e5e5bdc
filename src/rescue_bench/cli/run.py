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
from rescue_bench.engine.batch_api import BatchOptions
from rescue_bench.engine.estimate import TaskEstimate, make_counter
from rescue_bench.engine.manifest import TaskPlan
from rescue_bench.engine.run import RunOptions, RunResult
from rescue_bench.errors import ConfigError
from rescue_bench.judge.after_run import JudgeSettings, has_endpoint, judge_params, wants_bertscore
from rescue_bench.judge.setup import judge_settings, make_prices, run_budget, spec_prices, with_judges
from rescue_bench.pricing import Prices
from rescue_bench.printable import printable
from rescue_bench.spec import RunSpec, default_out
from rescue_bench.tasks import paper_columns

__all__ = ["make_prices", "register", "report_result", "summary_table"]
EXIT_STOPPED = 3
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]
OutDir = Annotated[Path | None, typer.Option("--out", help="Run directory (default: runs/<model>_<data>).")]
BatchPoll = Annotated[
    float,
    typer.Option(
        "--batch-poll",
        help="With --batch: seconds before the first poll of a batch, doubled after each (at most 600).",
    ),
]


def run(ctx: typer.Context, out: OutDir = None, quiet: Quiet = False, batch_poll: BatchPoll = 30.0) -> None:
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
    budget = run_budget(spec, spec.out)
    judging = judge_settings(spec, budget, spec.out)
    # A baseline, local or replay model costs nothing: the budget then guards the judges alone.
    paid = budget if has_endpoint(spec.model.name) else None
    options = RunOptions(quiet=quiet, budget=paid, batch=BatchOptions(poll=batch_poll))
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


def _judge(result: RunResult, spec: RunSpec, settings: JudgeSettings, quiet: bool) -> RunResult:
    from rescue_bench.judge.after_run import score_after_run
    from rescue_bench.judge.runner import JudgeStopped

    if settings.judges and not quiet:
        typer.echo(f"judging ER/VP with {', '.join(j.name for j in settings.judges)}", err=True)
    try:
        scores = asyncio.run(
            score_after_run(
                result.out, spec.tasks, settings, lambda m: typer.echo(f"warning: {printable(m)}", err=True)
            )
        )
    except JudgeStopped as exc:
        return replace(result, status="stopped", stop_reason=str(exc))
    return result if scores is None else replace(result, scores=scores)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


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
        typer.echo(f"stopped: {printable(result.stop_reason or 'not finished', one_line=True)}", err=True)
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
    from rescue_bench.engine.estimate import cap_note, estimate_plan
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
    params = spec.generation_params()
    rows = [estimate_plan(p, counter, params) for p in plans]
    total = sum(c for r in rows if (c := r.cost(price)) is not None) if price else None
    _print_estimate(rows, price, total, f"Estimate for {spec.model.name} (tokenizer: {counter.name})")
    typer.echo(f"max output tokens at the cap each request is sent with: {cap_note(params)}")
    if spec.batch and price is not None:
        typer.echo("--batch: priced at Batch API prices (half the online price).")
    typer.echo("Retries and single re-asks of missing items come on top; cached requests cost nothing.")
    judged = _print_judges(spec, plans)
    if total is not None and judged is not None:
        typer.echo(f"whole run, judges included: at most ${total + judged:.4f}")
        total += judged
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


def _print_judges(spec: RunSpec, plans: list[TaskPlan]) -> float | None:
    """The judge pass's table (requests, re-asks, tokens, cost per judge) and BERTScore pairs.

    Returns the judges' cost at most, when every judge has a price (else ``None``).
    """
    from rescue_bench.engine.estimate import cap_note
    from rescue_bench.judge.estimate import bertscore_pairs, estimate_judge

    total: float | None = 0.0
    counters: list[str] = []
    if spec.judges:
        table = Table(title="Judge pass (ER/VP; every prediction counted as valid, re-asks at most one each)")
        headers = (
            "Judge",
            "Instances",
            "Requests",
            "Re-asks (at most)",
            "Prompt tokens",
            "Max output tokens",
        )
        for header in (*headers, "Cost (USD, at most)"):
            table.add_column(header, justify="left" if header == "Judge" else "right")
        for judge in spec.judges:
            counter = make_counter(judge.name)
            params = judge_params(judge)
            row = estimate_judge(judge.name, plans, counter, spec.judge_repeats, params)
            cost = row.cost(_judge_prices(spec, judge.name))
            total = None if cost is None or total is None else total + cost
            numbers = (row.instances, row.requests, row.reasks, row.prompt_tokens, row.max_output_tokens)
            cells = [f"{n:,}" for n in numbers]
            table.add_row(judge.name, *cells, "-" if cost is None else f"{cost:.4f}")
            counters.append(f"{judge.name}: {counter.name}, output at {cap_note(params)}")
        Console(width=None if Console().is_terminal else 160).print(table)
        typer.echo(f"judge tokenizers and output caps: {'; '.join(counters)}")
    if wants_bertscore(JudgeSettings(bertscore=spec.bertscore), spec.tasks):
        instances, pairs = bertscore_pairs(plans)
        typer.echo(f"BERTScore (local, no cost): {pairs:,} text pairs over {instances:,} ER/VP instances.")
    return total if spec.judges else None


def _judge_prices(spec: RunSpec, judge: str) -> Prices | None:
    """The judge's prices for the estimate; a prices file without its entry leaves its cost open."""
    try:
        return spec_prices(spec, judge)
    except ConfigError as exc:
        typer.echo(f"note: {exc}", err=True)
        return None


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
