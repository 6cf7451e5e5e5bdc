"""CLI groups registered by :mod:`rescue_bench.cli.run`: ``cache stats|clear`` and ``batch export|import``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.cli.run import _report
from rescue_bench.cli.run_flags import (
    BaseUrl,
    BatchSize,
    Checkpoints,
    Context,
    Data,
    GoldField,
    Judge,
    KeyEnv,
    Limit,
    Mode,
    Model,
    NoThink,
    RppCurrent,
    RppGold,
    SampleIds,
    Seed,
    SspEmotion,
    Tasks,
    config_from,
    default_out,
)

cache_app = typer.Typer(name="cache", help="The response cache shared by all runs.", no_args_is_help=True)
batch_app = typer.Typer(name="batch", help="OpenAI Batch API export and import.", no_args_is_help=True)


@cache_app.command("stats")
def cache_stats() -> None:
    """Where the cache is, how many replies it holds, and for which models."""
    from rescue_bench.engine.cache import ResponseCache

    with ResponseCache() as cache:
        stats = cache.stats()
    typer.echo(f"path: {stats.path}")
    typer.echo(f"entries: {stats.entries}")
    typer.echo(f"size: {stats.size_bytes / 1e6:.2f} MB")
    for model, count in stats.by_model.items():
        typer.echo(f"  {model}: {count}")


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only this provider/model.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete cached replies (all, or those of one model)."""
    from rescue_bench.engine.cache import ResponseCache

    what = f"the cached replies of {model}" if model else "every cached reply"
    if not yes and not typer.confirm(f"Delete {what}?"):
        raise typer.Exit(1)
    with ResponseCache() as cache:
        deleted = cache.clear(model)
    typer.echo(f"deleted {deleted} cached replies")


@batch_app.command("export")
def batch_export(
    model: Model,
    out: Annotated[Path, typer.Option("--out", help="The Batch API requests file to write.")],
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
    run_dir: Annotated[
        Path | None, typer.Option("--run", help="Run directory that will receive the results.")
    ] = None,
) -> None:
    """Write every request of a run as OpenAI Batch API lines (also read by vLLM's run_batch)."""
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.batch import export_batch, write_export_note
    from rescue_bench.engine.manifest import select_samples

    config = config_from(locals())
    run_dir = run_dir or default_out(config)
    samples = select_samples(load_samples(config.data), config)
    summary = export_batch(config, samples, out, run_dir, {"batch_export": str(out)})
    write_export_note(run_dir, summary)
    typer.echo(f"wrote {summary.requests} requests ({summary.instances} instances) to {out}")
    typer.echo(f"then: rescue-bench batch import <results.jsonl> --run {run_dir}")


@batch_app.command("import")
def batch_import(
    results: Annotated[Path, typer.Argument(help="The Batch API output file (OpenAI or vLLM run_batch).")],
    run_dir: Annotated[Path, typer.Option("--run", help="The run directory made by `batch export`.")],
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
) -> None:
    """Score a Batch API results file into its run directory."""
    from rescue_bench.engine.batch import import_batch

    result, config = import_batch(results, run_dir, quiet=quiet)
    _report(result, config.model)
