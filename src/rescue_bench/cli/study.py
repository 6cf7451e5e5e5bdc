"""CLI command ``rescue-bench sweep``: run a study (many models, maybe perturbations) and its leaderboard.

``sweep STUDY.toml`` runs the study file; ``sweep --model A --model B ... [run flags]`` the simple case. The
run flags are those of ``run`` (:mod:`rescue_bench.cli.run_flags`, declared once); only ``--model`` is
repeatable here. Flags beside a study file override it (``--model`` replaces its models; a model flag such
as ``--base-url`` applies to every model). ``--print-spec`` prints the effective study as TOML.

Exit codes (:mod:`rescue_bench.cli.outcome`, the same as ``run``'s, of the most serious run): 0 every run
finished, 1 a run failed (its reason is in ``study.json``) or an error, 2 a usage error, 3 a run stopped
(budget), 4 a run is incomplete (no answer: re-run to ask again), 5 a run is degraded, 130 interrupted.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from rescue_bench.cli.flags import Flag, FlagValues, flag_values, option, with_flags
from rescue_bench.cli.outcome import exit_with, resume_command, summary_line, worst
from rescue_bench.cli.report import rank_method
from rescue_bench.cli.run_flags import make_spec, run_flags
from rescue_bench.errors import ConfigError
from rescue_bench.printable import echo, printable
from rescue_bench.spec import load_spec

if TYPE_CHECKING:
    from rescue_bench.report.build import Report
    from rescue_bench.report.tables import Table as ReportTable
    from rescue_bench.study import StudyOptions, StudyRecord, StudySpec

MODELS_FLAG: Final = Flag(
    ("--model", "-m"), "model", (), str, "provider/model of a model of the study (repeatable).", multiple=True
)


@dataclass(frozen=True, slots=True)
class Shown:
    """What the sweep shows while and after it runs (:data:`SHOWN_FLAGS`)."""

    quiet: bool
    ci: bool


SHOWN_FLAGS: Final = (
    option("--quiet -q", "quiet", bool, "No progress display.", False),
    option("--ci", "ci", bool, "Show 95% CIs in the terminal's tables too.", False),
)


@functools.cache
def sweep_flags() -> tuple[Flag, ...]:
    """How the sweep shows its progress and tables, then the run flags with ``--model`` repeatable."""
    return (*SHOWN_FLAGS, *(MODELS_FLAG if flag.dest == "model" else flag for flag in run_flags()))


def study_table(
    path: Path | None, flags: FlagValues, *, out: Path | None, context_curve: bool
) -> dict[str, Any]:
    """The flat study table: the file (if any) with the flags given beside it applied.

    The run flags are checked with the study's placeholder model (its models come from ``--model`` or a file).
    """
    from rescue_bench.study.spec import PLACEHOLDER

    if flags.given("spec") is not None:
        raise ConfigError("--spec: a sweep reads its study file as its argument (sweep STUDY.toml)")
    data: dict[str, Any] = load_spec(path, "study file") if path is not None else {}
    models = flags.given("model")
    given = make_spec(FlagValues({**flags.values, "model": PLACEHOLDER}), out=out)
    overrides = given.model_dump(mode="json", exclude_unset=True)
    model_flags = {k: v for k, v in overrides.pop("model", {}).items() if k != "name"}
    if isinstance(models, list | tuple):
        data["models"] = [{"name": name} for name in models]
    if model_flags:
        entries = data.get("models")
        data["models"] = [
            {**({"name": m} if isinstance(m, str) else m), **model_flags}
            for m in (entries if isinstance(entries, list) else [])
        ]
    if "perturb" in overrides:
        data["perturb"] = [",".join(overrides.pop("perturb"))]
    if context_curve:
        data["context_curve"] = True
    return _merged(data, overrides)


def _merged(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        inner = out.get(key)
        out[key] = _merged(inner, value) if isinstance(inner, dict) and isinstance(value, dict) else value
    return out


def sweep(
    ctx: typer.Context,
    study_file: Annotated[
        Path | None, typer.Argument(help="The study file (TOML); or give --model, repeated.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Study directory (default: studies/study).")
    ] = None,
    with_paper: Annotated[
        bool, typer.Option("--with-paper", help="Add the paper's published Table 5 rows to the leaderboard.")
    ] = False,
    context_curve: Annotated[
        bool, typer.Option("--context-curve", help="Add the runs context:0, 1, 3, 5 and all.")
    ] = False,
    adjust: Annotated[
        str, typer.Option("--adjust", help="Rank groups: p-value adjustment, holm | bh | none.")
    ] = "holm",
    level: Annotated[float, typer.Option("--level", help="Rank groups: significance level.")] = 0.05,
) -> None:
    """Run every model of a study (each into <out>/<model>/), then write study.json and the leaderboard.

    Re-running resumes: finished runs send nothing, a model added later is the only one asked.
    """
    from rescue_bench.study import StudyOptions, validate_study, write_study_leaderboard

    flags = flag_values(ctx)
    method = rank_method(adjust, level)
    table = study_table(study_file, flags, out=out, context_curve=context_curve)
    study = validate_study(table, where=str(study_file) if study_file is not None else "")
    if study.base.out is None:
        study = study.model_copy(update={"base": study.base.model_copy(update={"out": study.out})})
    if flags.print_spec:
        echo(study.to_toml(), nl=False)
        return
    shown = flags.record(Shown, SHOWN_FLAGS)
    options = StudyOptions(quiet=shown.quiet, warn=lambda m: echo(f"warning: {m}", err=True))
    record = _run(study, options)
    board, paths = write_study_leaderboard(
        study.out, record, with_paper=with_paper, method=method, level=level
    )
    _summary(board, record, paths, ci=shown.ci)


def _run(study: StudySpec, options: StudyOptions) -> StudyRecord:
    """Run the study; SIGTERM or Ctrl-C stops it resumably (exit 130)."""
    from rescue_bench.study import run_study

    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return run_study(study, options)
    except KeyboardInterrupt:
        echo(f"interrupted; re-run the same command to resume {study.out}", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _summary(leaderboard: Report, record: StudyRecord, paths: list[Path], *, ci: bool) -> None:
    """The leaderboard and rank groups fitted to the terminal, then each run's status and counts, with the
    reasons numbered below."""
    from rescue_bench.report.terminal import leaderboard_view, make_console, print_tables

    console = make_console()
    board = leaderboard_view(leaderboard.table("leaderboard"))
    print_tables(console, [board, (leaderboard.table("rank_groups"), 1)], ci=ci)
    print_tables(console, [(_runs_table(record), 1)])
    for path in paths:
        echo(f"  {path}")
    _endings(record)


def _runs_table(record: StudyRecord) -> ReportTable:
    """Each run's status, counts and cost; the reasons, sentences that would wrap one word a line in a
    column, are a numbered list in the note, each naming its run."""
    from rescue_bench.report.tables import Table as ReportTable

    rows: list[tuple[str, ...]] = []
    reasons: list[str] = []
    for run in record.runs:
        counts = run.counts
        failed, silent = counts.invalid - counts.request_failures, counts.request_failures
        cost = "-" if run.cost_usd is None else f"{run.cost_usd:.4f}"
        rows.append(
            (run.label, run.status, f"{counts.done}/{counts.instances}", str(failed), str(silent), cost)
        )
        if run.reason:
            label, reason = printable(run.label, one_line=True), printable(run.reason, one_line=True)
            reasons.append(f"{len(reasons) + 1}. {label}: {reason}")
    columns = ("Run", "Status", "Done", "Invalid", "No\nanswer", "Cost\n(USD)")
    return ReportTable("study", "Study", columns, tuple(rows), "\n".join(reasons))


def _endings(record: StudyRecord) -> None:
    """Each run's summary line, then what to do about the most serious status; exits with its code."""
    for run in record.runs:
        counts = run.counts
        valid = counts.done - counts.invalid
        echo(summary_line(run.label, run.status, valid, counts.instances))
    status = worst([r.status for r in record.runs])
    if status == "failed":
        echo("some runs failed (see study.json); the others went on", err=True)
    elif status in ("incomplete", "stopped", "running", "pending"):
        echo(f"some runs are not finished; resume (asks only what is missing): {resume_command()}", err=True)
    elif status == "degraded":
        echo("some runs are degraded: most of their answers failed (see their reasons)", err=True)
    exit_with(status)


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the root app."""
    app.command("sweep", cls=with_flags(sweep_flags))(sweep)
