"""CLI commands: ``rescue-bench run``, ``estimate``, ``cache stats|clear`` and ``batch export|import``.

Exit codes of ``run`` and ``batch import``: 0 when the run finished (failed instances are counted, not fatal),
1 on an error, 2 on a usage error, 3 when ``--budget`` stopped the run (re-run the same command to continue),
130 when interrupted (resumable too).
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from rescue_bench.cli.run_flags import (
    BaseUrl,
    BatchSize,
    Checkpoints,
    Clips,
    ClipUrl,
    Context,
    Data,
    Form,
    Fps,
    Frames,
    GoldField,
    Judge,
    KeyEnv,
    Limit,
    Mode,
    Model,
    NoThink,
    PriceIn,
    PriceOut,
    Prices,
    RppCurrent,
    RppGold,
    SampleIds,
    Seed,
    SspEmotion,
    Tasks,
    VideoForm,
    config_from,
    default_out,
    make_config,
    make_prices,
    parse_sample_ids,
)
from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.manifest import RunConfig
from rescue_bench.engine.run import RunOptions, RunResult
from rescue_bench.errors import ConfigError

__all__ = ["default_out", "make_config", "make_prices", "parse_sample_ids", "register", "summary_table"]
EXIT_STOPPED = 3

JudgeUrl = Annotated[
    str | None,
    typer.Option(
        "--judge-base-url",
        help="Endpoint of the judges (default: --base-url when a judge shares the model's provider or the "
        "model is a baseline; else the judge provider's own).",
    ),
]
JudgeKey = Annotated[
    str | None,
    typer.Option("--judge-api-key-env", help="Variable holding the judges' key (default: as the endpoint)."),
]
BertScore = Annotated[
    bool | None,
    typer.Option(
        "--bertscore/--no-bertscore",
        help="BERTScore ER/VP after the run (default: when the bertscore extra is installed).",
        show_default=False,
    ),
]


def run(
    model: Model,
    tasks: Tasks = "all",
    data: Data = "demo",
    mode: Mode = "dialogue",
    context_size: Context = None,
    batch_size: BatchSize = None,
    judge: Judge = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory (default: runs/<model>_<data>).")
    ] = None,
    limit_samples: Limit = None,
    sample_ids: SampleIds = None,
    seed: Seed = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Requests in flight at most.")] = 16,
    rpm: Annotated[float | None, typer.Option("--rpm", help="Requests per minute at most.")] = None,
    tpm: Annotated[float | None, typer.Option("--tpm", help="Tokens per minute at most.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per request attempt.")] = 120.0,
    max_retries: Annotated[int, typer.Option("--max-retries", help="Retries of 429/5xx/timeouts.")] = 5,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Ask invalid instances again.")
    ] = False,
    base_url: BaseUrl = None,
    api_key_env: KeyEnv = None,
    disable_thinking: NoThink = False,
    judge_base_url: JudgeUrl = None,
    judge_api_key_env: JudgeKey = None,
    bertscore: BertScore = None,
    rpp_gold_field: RppGold = GoldField.auto,
    rpp_current_turn: RppCurrent = False,
    ssp_target_emotion: SspEmotion = False,
    checkpoints_per_sample: Checkpoints = 5,
    clips: Clips = None,
    video_form: Form = VideoForm.video,
    video_frames: Frames = 4,
    clip_url_base: ClipUrl = None,
    video_fps: Fps = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Stop before spending more USD.")] = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
    prices: Prices = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
) -> None:
    """Run RESCUE-Bench against a model; re-running the same command resumes.

    With --judge, the ER/VP predictions are judged after the run, as `rescue-bench score` does.
    """
    from rescue_bench.engine.run import run_benchmark

    config = config_from(locals())
    config, judging = _judging(config, judge_base_url, judge_api_key_env, bertscore)
    judging = dataclasses.replace(
        judging, concurrency=concurrency, timeout=timeout, max_retries=max_retries, use_cache=not no_cache
    )
    out = out or default_out(config)
    engine = EngineOptions(
        concurrency=concurrency, rpm=rpm, tpm=tpm, max_retries=max_retries, use_cache=not no_cache
    )
    guard = _budget(budget, make_prices(model, price_in, price_out, prices), model, out)
    options = RunOptions(engine=engine, timeout=timeout, retry_failed=retry_failed, quiet=quiet, budget=guard)
    # SIGTERM (a job scheduler, `timeout`) stops the run like Ctrl-C: records closed, run.json "stopped".
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        result = run_benchmark(config, out, options)
        if result.status == "finished":
            result = _judge(result, config, judging, quiet)
    except KeyboardInterrupt:
        typer.echo(f"interrupted; re-run the same command to resume {out}", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    _report(result, config.model)


def _judging(
    config: RunConfig, judge_base_url: str | None, judge_api_key_env: str | None, bertscore: bool | None
) -> tuple[RunConfig, Any]:
    """The run config and the judge settings, checked before anything is sent.

    A baseline has no endpoint: with judges, its --base-url / --api-key-env are the judges'.
    """
    from rescue_bench.judge.after_run import JudgeSettings, has_endpoint, judge_endpoint, wants_bertscore

    for name in config.judges:
        if not has_endpoint(name):
            raise ConfigError(f"--judge {name}: a judge must be a chat model, such as openai/gpt-4o")
    endpoints = {
        judge_endpoint(
            config.model, j, config.base_url, config.api_key_env, judge_base_url, judge_api_key_env
        )
        for j in config.judges
    }
    if len(endpoints) > 1:
        raise ConfigError("--judge models behind different providers need --judge-base-url (one endpoint)")
    url, env = endpoints.pop() if endpoints else (None, None)
    for name in config.judges:
        _check_judge(name, url, env)
    settings = JudgeSettings(config.judges, url, env, bertscore)
    wants_bertscore(settings, config.tasks)  # a missing extra asked for by --bertscore fails now, not later
    if config.judges and not has_endpoint(config.model):
        config = dataclasses.replace(config, base_url=None, api_key_env=None)
    return config, settings


def _check_judge(name: str, base_url: str | None, api_key_env: str | None) -> None:
    """Build the judge's provider once, so that a missing key stops the run before it starts."""
    from rescue_bench.models.registry import get_model

    model = get_model(name, base_url=base_url, api_key_env=api_key_env)
    close = getattr(model, "aclose", None)
    if close is not None:
        asyncio.run(close())


def _judge(result: RunResult, config: RunConfig, settings: Any, quiet: bool) -> RunResult:
    from rescue_bench.judge.after_run import score_after_run

    if settings.judges and not quiet:
        typer.echo(f"judging ER/VP with {', '.join(settings.judges)}", err=True)
    scores = asyncio.run(
        score_after_run(result.out, config.tasks, settings, lambda m: typer.echo(f"warning: {m}", err=True))
    )
    return result if scores is None else dataclasses.replace(result, scores=scores)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _budget(budget: float | None, prices: Any, model: str, out: Path) -> Any:
    if budget is None:
        return None
    if prices is None:
        raise ConfigError("--budget needs prices: --price-in and --price-out, or --prices FILE")
    from rescue_bench.engine.estimate import Budget, make_counter
    from rescue_bench.pricing import spent_so_far
    from rescue_bench.rundir import read_requests

    spent = spent_so_far(read_requests(out), prices)
    return Budget(budget, prices, make_counter(model), spent=spent)


def _report(result: RunResult, model: str) -> None:
    from rich.console import Console

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


COLUMNS = (
    ("itp", "precision", "ITP Prec.", 100, 2),
    ("itp", "recall", "ITP Rec.", 100, 2),
    ("itp", "f1", "ITP F1", 100, 2),
    ("rpp", "accuracy", "RPP Acc.", 100, 2),
    ("stp", "recall_at_1", "STP Rec.", 100, 2),
    ("stp", "mrr", "STP MRR", 100, 2),
    ("ssp", "recall_at_1", "SSP Rec.", 100, 2),
    ("ssp", "mrr", "SSP MRR", 100, 2),
    ("er", "llm", "ER LLM", 1, 2),
    ("er", "bertscore_f1", "ER BERT", 1, 4),
    ("vp", "llm", "VP LLM", 1, 2),
    ("vp", "bertscore_f1", "VP BERT", 1, 4),
)
"""The paper's Table 5 columns: (task, metric, header, scale, decimals)."""


def summary_table(scores: dict[str, Any], model: str) -> Any:
    """The paper's Table 5 layout, one row per scope (Both, Couple, Family); '-' for a missing value."""
    from rich.table import Table

    table = Table(title=f"RESCUE-Bench: {model}")
    table.add_column("Scope")
    for _, _, header, _, _ in COLUMNS:
        table.add_column(header, justify="right")
    for scope, label in (("all", "Both"), ("couple", "Couple"), ("family", "Family")):
        if not any(scope in (scores.get(t) or {}) for t, *_ in COLUMNS):
            continue
        cells = []
        for task, metric, _, scale, decimals in COLUMNS:
            value = ((scores.get(task) or {}).get(scope) or {}).get(metric)
            cells.append("-" if value is None else f"{value * scale:.{decimals}f}")
        table.add_row(label, *cells)
    return table


def estimate(
    model: Model,
    tasks: Tasks = "all",
    data: Data = "demo",
    mode: Mode = "dialogue",
    context_size: Context = None,
    batch_size: BatchSize = None,
    judge: Judge = None,
    limit_samples: Limit = None,
    sample_ids: SampleIds = None,
    seed: Seed = None,
    base_url: BaseUrl = None,
    api_key_env: KeyEnv = None,
    disable_thinking: NoThink = False,
    rpp_gold_field: RppGold = GoldField.auto,
    rpp_current_turn: RppCurrent = False,
    ssp_target_emotion: SspEmotion = False,
    checkpoints_per_sample: Checkpoints = 5,
    clips: Clips = None,
    video_form: Form = VideoForm.video,
    video_frames: Frames = 4,
    clip_url_base: ClipUrl = None,
    video_fps: Fps = None,
    budget: Annotated[
        float | None, typer.Option("--budget", help="Compare the estimate with a budget.")
    ] = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
    prices: Prices = None,
) -> None:
    """Requests, prompt tokens and (with prices) cost per task, before spending anything."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.estimate import estimate_requests, make_counter
    from rescue_bench.engine.manifest import build_plans, select_samples
    from rescue_bench.engine.video import check_video_config, clip_coverage

    config = config_from(locals())
    check_video_config(config)
    price = make_prices(model, price_in, price_out, prices)
    plans = build_plans(select_samples(load_samples(config.data), config), config)
    counter = make_counter(model)
    rows = [
        estimate_requests(p.name, len(p.instances), [p.task.render(b, p.cfg) for b in p.batches], counter)
        for p in plans
    ]
    total = sum(c for r in rows if (c := r.cost(price)) is not None) if price else None
    _print_estimate(rows, price, total, f"Estimate for {model} (tokenizer: {counter.name})")
    typer.echo("Retries and single re-asks of missing items come on top; cached requests cost nothing.")
    if config.judges:
        typer.echo("Judge requests (--judge) are not in the estimate.")
    coverage = clip_coverage(config, plans)
    if coverage is not None:
        typer.echo(
            f"video: {coverage.clips} clips attached over {coverage.requests} requests; "
            f"{coverage.unusable} instances lack the clip their task needs; clip and frame tokens are not "
            "counted above"
        )
    if budget is not None and total is not None and total > budget:
        typer.echo(
            f"the worst case (${total:.2f}) exceeds --budget ${budget:.2f}: the run would stop before the end"
        )


def _print_estimate(rows: list[Any], price: Any, total: float | None, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

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
    """Add ``run``, ``estimate``, ``cache`` and ``batch`` to the root app."""
    from rescue_bench.cli.run_groups import batch_app, cache_app

    app.command("run")(run)
    app.command("estimate")(estimate)
    app.add_typer(cache_app, name="cache")
    app.add_typer(batch_app, name="batch")
