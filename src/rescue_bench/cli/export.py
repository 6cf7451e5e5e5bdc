"""CLI commands: ``export RUN --format eee|hf --out DIR``, ``publish DIR --repo ORG/NAME`` and
``import inspect LOG... --out RUN`` (docs/adapters.md).

The adapters need optional extras (``adapters`` for Parquet, ``inspect`` for inspect logs); each command
imports its adapter when it runs, so the core install keeps working without them and a missing extra is a
one-line error naming it.
"""

from __future__ import annotations

import importlib.util
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from rescue_bench.errors import DependencyError
from rescue_bench.printable import echo
from rescue_bench.rundir import load_run


class Format(StrEnum):
    eee = "eee"
    hf = "hf"


def _need(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise DependencyError.missing(module, extra)


def _check_finished(run: Path, partial: bool) -> None:
    from rescue_bench.report.build import check_finished
    from rescue_bench.rundir import load_run

    for progress in check_finished([load_run(run)], allow_partial=partial):
        echo(f"PARTIAL: {progress.describe()}", err=True)


def export(
    run: Annotated[Path, typer.Argument(help="A run directory, or a study.", show_default=False)],
    fmt: Annotated[Format, typer.Option("--format", help="eee: Every Eval Ever; hf: a Hub dataset folder.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory.", show_default=False)],
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Leave out replies, problems and the ER/VP gold and predicted texts (both formats).",
        ),
    ] = False,
    partial: Annotated[
        bool, typer.Option("--partial", help="Export a run that is not finished (its status says so).")
    ] = False,
) -> None:
    """Write a run's results in another format (Every Eval Ever records, or a Hugging Face Hub folder).

    A study directory exports each of its runs into OUT/<its run directory's name>. An unfinished run
    (incomplete, stopped) is refused unless --partial is given.
    """
    from rescue_bench.rundir import expand_run_dirs, is_study

    if fmt is Format.hf:
        _need("pyarrow", "adapters")
    study = is_study(run)
    members = expand_run_dirs([run])
    for each in members:
        _check_finished(each, partial)
    paths: list[Path] = []
    for each in members:
        paths += _export_one(each, fmt, out / each.name if study else out, redact)
    echo(f"wrote {len(paths)} files to {out}")
    for path in paths:
        echo(f"  {path}")


def _export_one(run: Path, fmt: Format, out: Path, redact: bool) -> list[Path]:
    if fmt is Format.eee:
        from rescue_bench.adapters.eee import export_eee

        return list(export_eee(run, out, redact=redact))
    from rescue_bench.adapters.hf import export_hf

    return list(export_hf(run, out, redact=redact))


def publish(
    folder: Annotated[
        Path, typer.Argument(help="A folder made by `export --format hf`.", show_default=False)
    ],
    repo: Annotated[
        str, typer.Option("--repo", help="The dataset repository, ORG/NAME.", show_default=False)
    ],
    private: Annotated[bool, typer.Option("--private", help="Create the repository as private.")] = False,
) -> None:
    """Upload an exported folder to a Hugging Face dataset repository (token: HF_TOKEN or `hf auth login`)."""
    from huggingface_hub import HfApi

    from rescue_bench.adapters.hf import publish as upload

    url = upload(folder, repo, HfApi(), private=private)
    echo(f"published {folder} to {repo}: {url}")


def import_inspect(
    logs: Annotated[
        list[Path], typer.Argument(help="inspect_ai logs of RESCUE-Bench tasks.", show_default=False)
    ],
    out: Annotated[Path, typer.Option("--out", help="The new run directory.", show_default=False)],
) -> None:
    """Turn inspect_ai logs of our tasks (one per task, one model) into a run directory."""
    _need("inspect_ai", "inspect")
    from rescue_bench.adapters.inspect.logs import import_logs

    scores = import_logs(logs, out)
    tasks = [t for t in scores if not t.startswith("_")]
    echo(f"run directory: {out} ({', '.join(tasks)})")
    manifest = load_run(out).manifest
    if manifest.status != "finished":  # a --limit subset: reports show it partial
        echo(f"{manifest.status}: {manifest.stop_reason}")


def register(app: typer.Typer) -> None:
    """Add ``export``, ``publish`` and the ``import`` group to the root app."""
    app.command("export")(export)
    app.command("publish")(publish)
    imports = typer.Typer(
        name="import", help="Make run directories from other harnesses' logs.", no_args_is_help=True
    )
    imports.command("inspect")(import_inspect)
    app.add_typer(imports, name="import")
