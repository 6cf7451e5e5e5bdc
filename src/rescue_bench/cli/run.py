"""CLI commands: ``rescue-bench run``, ``estimate``, ``cache stats|clear`` and ``batch export|import``.

Exit codes of ``run`` and ``batch import``: 0 when the run finished (failed instances are counted, not fatal),
1 on an error, 2 on a usage error, 3 when ``--budget`` stopped the run (re-run the same command to continue),
130 when interrupted (resumable too).
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from rescue_bench.engine.execute import EngineOptions
from rescue_bench.engine.manifest import ALL_TASKS, RunConfig
from rescue_bench.engine.run import RunOptions, RunResult
from rescue_bench.errors import ConfigError

EXIT_STOPPED = 3

Model = Annotated[
    str, typer.Option("--model", "-m", help="provider/model, e.g. openai/gpt-4o, local/gemma-3-270m.")
]
Tasks = Annotated[str, typer.Option("--tasks", help="all, or a comma list of itp,rpp,stp,ssp,er,vp.")]
Data = Annotated[
    str, typer.Option("--data", help="A release JSONL file, a directory, 'hf[:repo]' or 'demo'.")
]
Mode = Annotated[
    str, typer.Option("--mode", help="Input mode (only 'dialogue' is available for text models).")
]
Context = Annotated[
    int | None, typer.Option("--context-size", help="-1 all prior rows, 0 none, N the last N.")
]
BatchSize = Annotated[
    int | None, typer.Option("--batch-size", help="Instances per request (default: per task).")
]
Judge = Annotated[
    list[str] | None, typer.Option("--judge", help="Judge model for ER/VP (stored; repeatable).")
]
Limit = Annotated[int | None, typer.Option("--limit-samples", help="Only the first N selected samples.")]
SampleIds = Annotated[
    Path | None, typer.Option("--sample-ids", help="JSON list, {'sample_ids': [...]}, or lines.")
]
Seed = Annotated[int | None, typer.Option("--seed", help="Sent to the model as its seed; seeds baselines.")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="Endpoint of an OpenAI-compatible server.")]
KeyEnv = Annotated[
    str | None, typer.Option("--api-key-env", help="Name of the variable that holds the API key.")
]
NoThink = Annotated[
    bool, typer.Option("--disable-thinking", help="Send the endpoint's switch to turn off thinking.")
]
PriceIn = Annotated[float | None, typer.Option("--price-in", help="USD per million prompt tokens.")]
PriceOut = Annotated[float | None, typer.Option("--price-out", help="USD per million completion tokens.")]
Prices = Annotated[
    Path | None, typer.Option("--prices", help="JSON file of prices (per model or one entry).")
]


def parse_sample_ids(path: Path) -> tuple[str, ...]:
    """Sample ids from a JSON list, a ``{"sample_ids": [...]}`` object, or lines (``#`` comments)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--sample-ids: cannot read {path} ({exc.__class__.__name__})") from None
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--sample-ids: {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        ids = data.get("sample_ids") if isinstance(data, dict) else data
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ConfigError(f"--sample-ids: {path} must hold a list of strings or {{'sample_ids': [...]}}")
        return tuple(ids)
    return tuple(
        line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    )


def make_config(
    model: str,
    tasks: str,
    data: str,
    mode: str,
    context_size: int | None,
    batch_size: int | None,
    judge: list[str] | None,
    limit_samples: int | None,
    sample_ids: Path | None,
    seed: int | None,
    disable_thinking: bool,
    base_url: str | None,
    api_key_env: str | None,
) -> RunConfig:
    names = (
        ALL_TASKS
        if tasks.strip().lower() == "all"
        else tuple(t.strip().lower() for t in tasks.split(",") if t.strip())
    )
    unknown = [t for t in names if t not in ALL_TASKS]
    if unknown or not names:
        raise ConfigError(
            f"--tasks: unknown task {unknown[0] if unknown else tasks!r}; use all or {','.join(ALL_TASKS)}"
        )
    if batch_size is not None and batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1 (got {batch_size})")
    return RunConfig(
        model=model,
        tasks=names,
        data=data,
        mode=mode,
        context_size=context_size,
        batch_size=batch_size,
        judges=tuple(judge or ()),
        limit_samples=limit_samples,
        sample_ids=parse_sample_ids(sample_ids) if sample_ids else None,
        seed=seed,
        disable_thinking=disable_thinking,
        base_url=base_url,
        api_key_env=api_key_env,
    )


def default_out(config: RunConfig) -> Path:
    """``runs/<model>_<data>[_<tasks>]``: the same command lands in (and resumes) the same directory."""

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"

    data = slug(Path(config.data).stem if config.data not in ("demo", "hf") else config.data)
    tasks = "" if config.tasks == ALL_TASKS else "_" + "-".join(config.tasks)
    return Path("runs") / f"{slug(config.model)}_{data}{tasks}"


def make_prices(model: str, price_in: float | None, price_out: float | None, prices: Path | None) -> Any:
    from rescue_bench.engine.estimate import Prices, load_prices

    if prices is not None:
        if price_in is not None or price_out is not None:
            raise ConfigError("give either --prices or --price-in/--price-out, not both")
        return load_prices(prices, model)
    if (price_in is None) != (price_out is None):
        raise ConfigError("--price-in and --price-out go together")
    return None if price_in is None or price_out is None else Prices(price_in, price_out)


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
    budget: Annotated[float | None, typer.Option("--budget", help="Stop before spending more USD.")] = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
    prices: Prices = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
) -> None:
    """Run RESCUE-Bench against a model; re-running the same command resumes."""
    from rescue_bench.engine.run import run_benchmark

    config = make_config(
        model,
        tasks,
        data,
        mode,
        context_size,
        batch_size,
        judge,
        limit_samples,
        sample_ids,
        seed,
        disable_thinking,
        base_url,
        api_key_env,
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
    except KeyboardInterrupt:
        typer.echo(f"interrupted; re-run the same command to resume {out}", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    _report(result, config.model)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _budget(budget: float | None, prices: Any, model: str, out: Path) -> Any:
    if budget is None:
        return None
    if prices is None:
        raise ConfigError("--budget needs prices: --price-in and --price-out, or --prices FILE")
    from rescue_bench.engine.estimate import Budget, make_counter, spent_so_far
    from rescue_bench.engine.store import RunStore

    spent = spent_so_far(RunStore(out).request_records(), prices)
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
    budget: Annotated[
        float | None, typer.Option("--budget", help="Compare the estimate with a budget.")
    ] = None,
    price_in: PriceIn = None,
    price_out: PriceOut = None,
    prices: Prices = None,
) -> None:
    """Requests, prompt tokens and (with prices) cost per task, before spending anything."""
    from rich.console import Console
    from rich.table import Table

    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.estimate import estimate_requests, make_counter
    from rescue_bench.engine.manifest import build_plans, select_samples

    config = make_config(
        model,
        tasks,
        data,
        mode,
        context_size,
        batch_size,
        judge,
        limit_samples,
        sample_ids,
        seed,
        disable_thinking,
        base_url,
        api_key_env,
    )
    price = make_prices(model, price_in, price_out, prices)
    plans = build_plans(select_samples(load_samples(config.data), config), config)
    counter = make_counter(model)
    rows = [
        estimate_requests(p.name, len(p.instances), [p.task.render(b, p.cfg) for b in p.batches], counter)
        for p in plans
    ]
    table = Table(title=f"Estimate for {model} (tokenizer: {counter.name})")
    for header in (
        "Task",
        "Instances",
        "Requests",
        "Prompt tokens",
        "Max output tokens",
        "Cost (USD, at most)",
    ):
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
    total = sum(c for r in rows if (c := r.cost(price)) is not None) if price else None
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
    typer.echo("Retries and single re-asks of missing items come on top; cached requests cost nothing.")
    if budget is not None and total is not None and total > budget:
        typer.echo(
            f"the worst case (${total:.2f}) exceeds --budget ${budget:.2f}: the run would stop before the end"
        )


def register(app: typer.Typer) -> None:
    """Add ``run``, ``estimate``, ``cache`` and ``batch`` to the root app."""
    from rescue_bench.cli.run_groups import batch_app, cache_app

    app.command("run")(run)
    app.command("estimate")(estimate)
    app.add_typer(cache_app, name="cache")
    app.add_typer(batch_app, name="batch")
