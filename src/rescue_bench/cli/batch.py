"""CLI commands: ``rescue-bench batch export|import`` (OpenAI Batch API files, also vLLM's run_batch)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.cli.flags import flag_values
from rescue_bench.cli.run import Quiet, report_result, warn
from rescue_bench.cli.run_flags import SpecCommand, make_spec, print_spec
from rescue_bench.printable import echo

batch_app = typer.Typer(name="batch", help="OpenAI Batch API export and import.", no_args_is_help=True)


@batch_app.command("export", cls=SpecCommand)
def batch_export(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="The Batch API requests file to write.")],
    run_dir: Annotated[
        Path | None, typer.Option("--run", help="Run directory that will receive the results.")
    ] = None,
) -> None:
    """Write every request of a run as OpenAI Batch API lines (also read by vLLM's run_batch)."""
    from rescue_bench.batch.offline import export_batch, write_export_note
    from rescue_bench.data.load import load_samples
    from rescue_bench.engine.plans import select_samples
    from rescue_bench.evaluation.run import with_out

    flags = flag_values(ctx)
    spec = with_out(make_spec(flags, out=run_dir))
    if flags.print_spec:
        print_spec(spec)
        return
    assert spec.out is not None
    samples = select_samples(load_samples(spec.data), spec)
    summary = export_batch(spec, samples, out, spec.out)
    write_export_note(spec.out, summary)
    echo(f"wrote {summary.requests} requests ({summary.instances} instances) to {out}")
    echo(f"then: rescue-bench batch import <results.jsonl> --run {spec.out}")


@batch_app.command("import")
def batch_import(
    results: Annotated[Path, typer.Argument(help="The Batch API output file (OpenAI or vLLM run_batch).")],
    run_dir: Annotated[Path, typer.Option("--run", help="The run directory made by `batch export`.")],
    quiet: Quiet = False,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="The endpoint address `batch export` was given, with its query: a key the results echo "
            "back is redacted, as `run --batch` does (never written).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Score a Batch API results file into its run directory, then judge it as `run` does.

    Exit codes are `run`'s: 0 finished, 3 budget stop, 4 incomplete, 5 degraded.
    """
    from rescue_bench.batch.offline import import_results
    from rescue_bench.evaluation.run import SessionOptions, execute, prepare

    spec, asker = import_results(results, run_dir, base_url=base_url)
    prepared = prepare(spec, asker)
    outcome = asyncio.run(execute(prepared, SessionOptions(quiet=quiet, warn=warn)))
    report_result(outcome, spec.model.name)


def register(app: typer.Typer) -> None:
    """Add the ``batch`` command group to the root app."""
    app.add_typer(batch_app, name="batch")
