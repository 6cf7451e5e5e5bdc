"""CLI commands: ``rescue-bench data get | validate | stats | synth``."""

from __future__ import annotations

import json
import logging
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.data.sources import SOURCE_HELP
from rescue_bench.printable import echo, printable

data_app = typer.Typer(
    name="data", help="Get, check, describe and generate benchmark data.", no_args_is_help=True
)


class ValidateFormat(StrEnum):
    text = "text"
    json = "json"


class StatsFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    md = "md"


@data_app.command()
def validate(
    source: Annotated[str, typer.Argument(help=SOURCE_HELP, show_default=False)],
    strict: Annotated[bool, typer.Option("--strict", help="Fail (exit 1) on warnings too.")] = False,
    fmt: Annotated[
        ValidateFormat, typer.Option("--format", help="text: one line per problem; json: {errors, warnings}.")
    ] = ValidateFormat.text,
    max_row_chars: Annotated[
        int,
        typer.Option(
            "--max-row-chars",
            min=1,
            help="Warn about rows holding more text than this (all fields together).",
        ),
    ] = 200_000,
) -> None:
    """Check a source and list every problem with its file, line, sample, row and field.

    Exit code 0 when clean, 1 on errors (or on warnings with --strict), 2 on usage errors.
    """
    from rescue_bench.data.validate import validate_source

    report = validate_source(source, max_row_chars=max_row_chars)
    if fmt is ValidateFormat.json:
        echo(json.dumps(report.to_json(), indent=2))  # ASCII: every control a JSON escape
    else:
        echo(printable(report.render_text()))
    if report.failed(strict=strict):
        raise typer.Exit(1)


@data_app.command()
def stats(
    source: Annotated[str, typer.Argument(help=SOURCE_HELP, show_default=False)],
    fmt: Annotated[
        StatsFormat,
        typer.Option(
            "--format", help="table (terminal), json (one object: couple, family, all), csv (Table 3), md."
        ),
    ] = StatsFormat.table,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Also write stats.json, CSV files and transition heatmaps (PNG) to this directory."
        ),
    ] = None,
) -> None:
    """Dataset statistics: the paper's Table 3, label distributions and relation-pattern transitions."""
    from rescue_bench.data import stats_output
    from rescue_bench.data.load import load_samples
    from rescue_bench.data.stats import compute_stats

    result = compute_stats(load_samples(source))
    if fmt is StatsFormat.table:
        from rescue_bench.report.terminal import make_console

        make_console().print(stats_output.render_rich(result))
    elif fmt is StatsFormat.json:
        echo(json.dumps(result.to_json(), indent=2))
    elif fmt is StatsFormat.csv:
        echo(stats_output.render_csv(result), nl=False)
    else:
        echo(stats_output.render_markdown(result), nl=False)
    if out is not None:
        for path in stats_output.write_outputs(result, out):
            echo(f"wrote {path}", err=True)


@data_app.command()
def synth(
    out: Annotated[Path, typer.Option("--out", help="The JSONL file to write.", show_default=False)],
    samples: Annotated[
        int, typer.Option("--samples", min=1, help="Number of samples (split 174:17 couple:family).")
    ] = 191,
    seed: Annotated[int, typer.Option("--seed", help="Random seed; the same seed gives the same file.")] = 0,
) -> None:
    """Write fictional, schema-valid data at the paper's scale (for scale and performance work)."""
    from rescue_bench.data.synth import write_synthetic

    summary = write_synthetic(out, samples=samples, seed=seed)
    echo(summary.describe())


class ReleaseSource(StrEnum):
    github = "github"
    hf = "hf"


@data_app.command()
def get(
    source: Annotated[
        ReleaseSource,
        typer.Option(
            "--source",
            help="github: the authors' repository at the release commit; hf: the Hugging Face dataset.",
        ),
    ] = ReleaseSource.github,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Another address for the source (a mirror); default: $RESCUE_BENCH_GITHUB_URL or "
            "raw.githubusercontent.com for github, $RESCUE_BENCH_HF_ENDPOINT or the hub's own for hf.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the server.")
    ] = 60.0,
    force: Annotated[
        bool, typer.Option("--force", help="Download again even when a good copy is there.")
    ] = False,
) -> None:
    """Download the official release into the user cache, check it, and use it as `--data rescue`.

    It is checked (191 samples: 174 couple, 17 family; 7,079 rows) before it replaces anything.
    """
    from rescue_bench.data.fetch import fetch_release

    installed = fetch_release(source.value, base_url=base_url, timeout=timeout, force=force)
    record = installed.record
    verb = "downloaded" if installed.downloaded else "already downloaded (--force downloads again)"
    echo(f"{verb}: {installed.path}")
    if record.official:
        echo(f"  the official release, from {record.url}")
    else:
        echo(printable(f"  a copy from {record.url}, not verified as the official release", one_line=True))
    echo(f"  {record.counts.describe()}, SHA-256 {record.sha256}")
    echo("use it as: rescue-bench run --data rescue ...")


class _EchoWarnings(logging.Handler):
    """Shows the data loader's warnings (rows a model will get whole, rows without a speaker) on stderr.

    ``load_samples`` logs them for every command that loads data (``run``, ``tasks``, ``data stats``...);
    without this they would rely on logging's last-resort handler, which any other library's logging setup
    silences.
    """

    def emit(self, record: logging.LogRecord) -> None:
        echo(printable(record.getMessage()), err=True)


def register(app: typer.Typer) -> None:
    """Add the ``data`` command group to the root app, and show the loader's warnings on stderr."""
    app.add_typer(data_app)
    logger = logging.getLogger("rescue_bench.data")
    if not any(isinstance(h, _EchoWarnings) for h in logger.handlers):
        logger.addHandler(_EchoWarnings(logging.WARNING))
