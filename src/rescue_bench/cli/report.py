"""CLI commands: ``rescue-bench report RUN... [--out DIR] [--with-paper]`` and ``compare RUN...``."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

import typer

from rescue_bench.cli.flags import flag_values, option, with_flags
from rescue_bench.printable import echo, printable
from rescue_bench.problems import one_line

if TYPE_CHECKING:
    from rescue_bench.metrics.multiplicity import Adjustment
    from rescue_bench.rundir import RunData

Runs = Annotated[
    list[Path],
    typer.Argument(
        help="One or more run or study directories (BASE first for robustness).", show_default=False
    ),
]
ShowCI = Annotated[bool, typer.Option("--ci", help="Show 95% CIs in the terminal's tables too.")]


def report(
    runs: Runs,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory (default: <first run>/report).")
    ] = None,
    with_paper: Annotated[
        bool,
        typer.Option("--with-paper", help="Add the paper's published Table 5 rows, marked as published."),
    ] = False,
    prices: Annotated[
        Path | None,
        typer.Option("--prices", help="JSON prices (USD per million tokens) for the cost column."),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Report unfinished runs too, every table and file marked PARTIAL with the counts.",
        ),
    ] = False,
    ci: ShowCI = False,
) -> None:
    """Write report.md, a self-contained report.html, results.xlsx, results.csv and table.tex.

    `report BASE PERTURBED...`: runs made with --perturb after an unperturbed BASE add the robustness table
    (change from BASE with a paired CI, share of flipped answers); they must share BASE's data, model and
    tasks. An unfinished run (killed, stopped, instances left to do) is refused unless --partial is given.
    A study directory stands for its runs, its own leaderboard first.
    """
    from rescue_bench.report.build import build_report, protocol_notes, write_report
    from rescue_bench.report.leaderboard import study_tables
    from rescue_bench.report.terminal import leaderboard_view, make_console, print_tables
    from rescue_bench.rundir import expand_run_dirs

    first = study_tables(runs, with_paper=with_paper)
    built = build_report(
        expand_run_dirs(runs), with_paper=with_paper, prices=prices, allow_partial=partial, first=first
    )
    if built.banner:
        echo(f"warning: {printable(built.banner)}", err=True)
    for note in protocol_notes(expand_run_dirs(runs)):  # numbers made by older rules: said, not hidden
        echo(f"warning: {note}", err=True)
    target = out or runs[0] / "report"
    paths = write_report(built, target)
    boards = [t for t in first if t.key.endswith("_leaderboard")] or [built.table("leaderboard")]
    shown = [leaderboard_view(t) for t in boards] + [(t, 1) for t in first if t.key.endswith("_rank_groups")]
    print_tables(make_console(), shown, ci=ci)
    echo(
        f"wrote {len([p for p in paths if p.suffix != '.png'])} files and "
        f"{len([p for p in paths if p.suffix == '.png'])} figures to {target}"
    )
    for path in paths:
        if path.suffix != ".png":
            echo(f"  {path}")


@dataclass(frozen=True, slots=True)
class CompareOptions:
    """What ``compare`` is asked besides its runs (:data:`COMPARE_FLAGS`)."""

    scopes: str
    every_metric: bool
    resamples: int
    seed: int
    as_json: bool
    adjust: str
    level: float
    partial: bool
    allow_different_judges: bool
    ci: bool


COMPARE_FLAGS: Final = (
    option("--scopes", "scopes", str, "Comma list of all, couple, family.", "all"),
    option(
        "--all-metrics", "every_metric", bool, "Every headline metric, not only the paper's columns.", False
    ),
    option("--resamples", "resamples", int, "Bootstrap resamples.", 1000),
    option("--seed", "seed", int, "Bootstrap seed.", 0),
    option("--json", "as_json", bool, "Print the full comparison as JSON.", False),
    option(
        "--adjust",
        "adjust",
        str,
        "Three runs or more: p-value adjustment over the pairs, holm | bh | none.",
        "holm",
    ),
    option("--level", "level", float, "Three runs or more: significance level of the rank groups.", 0.05),
    option("--partial", "partial", bool, "Compare runs that are not finished (marked PARTIAL).", False),
    option(
        "--allow-different-judges",
        "allow_different_judges",
        bool,
        "Compare ER/VP judge scores of runs judged by different judges.",
        False,
    ),
    option("--ci", "ci", bool, "Three runs or more: show each difference's 95% CI in the matrix.", False),
)


def compare(
    ctx: typer.Context,
    runs: Annotated[
        list[Path], typer.Argument(help="Two run directories or more, or a study.", show_default=False)
    ],
) -> None:
    """Paired differences of runs on their shared instances (bootstrap CIs, McNemar's test).

    With three runs or more: the matrix of every pair's difference, adjusted p-values and rank groups. A study
    directory stands for its runs. Every difference between the runs that changes what a number means is named
    first.
    """
    from rescue_bench.report.build import check_finished
    from rescue_bench.rundir import expand_run_dirs, load_run

    o = flag_values(ctx).record(CompareOptions, COMPARE_FLAGS)
    expanded = expand_run_dirs(runs)
    chosen, method = _compare_settings(expanded, o.scopes, o.resamples, o.adjust, o.level)
    loaded = [load_run(path) for path in expanded]
    unfinished = check_finished(loaded, allow_partial=o.partial)
    _check_like(loaded, o.allow_different_judges)
    for progress in unfinished:
        echo(f"PARTIAL: {progress.describe()}", err=True)
    if len(loaded) == 2:
        _compare_two(loaded[0], loaded[1], chosen, o.every_metric, o.resamples, o.seed, o.as_json)
        return
    _compare_many(loaded, chosen, o.every_metric, o.resamples, o.seed, o.as_json, method, o.level, o.ci)


def _check_like(loaded: list[RunData], allow_different_judges: bool) -> None:
    """Name every difference between the runs (stderr); refuse judge scores by different judges unless asked;
    refuse runs that share no instance."""
    from rescue_bench.errors import ConfigError
    from rescue_bench.judge.merge import BERTSCORE_JUDGE, JUDGED_TASKS
    from rescue_bench.report.likeness import differences
    from rescue_bench.report.tables import display_names

    names = display_names(loaded)
    found = differences(loaded)
    for difference in found:
        echo(f"not like for like: {one_line(difference.describe(names))}", err=True)
    judged = all(
        any(line.task in JUDGED_TASKS and line.judge != BERTSCORE_JUDGE for line in run.judgment_lines)
        for run in loaded
    )
    if judged and any(d.affects == "judged" for d in found) and not allow_different_judges:
        raise ConfigError(
            "the runs were judged by different judges or judge settings, so their ER/VP LLM scores are not "
            "comparable; re-judge them alike (`rescue-bench score RUN --judge M`), or pass "
            "--allow-different-judges"
        )
    shared = set.intersection(*({line.key for line in run.prediction_lines} for run in loaded))
    if not shared:
        raise ConfigError("the runs share no instance: there is nothing to pair (same data and tasks?)")


def _compare_settings(
    runs: list[Path], scopes: str, resamples: int, adjust: str, level: float
) -> tuple[tuple[str, ...], Adjustment]:
    """The scopes and p-value adjustment of ``compare``, once every option is known to be valid."""
    from rescue_bench.errors import ConfigError

    chosen = tuple(s.strip().lower() for s in scopes.split(",") if s.strip())
    if not chosen or any(s not in ("all", "couple", "family") for s in chosen):
        raise ConfigError(f"--scopes: expected a comma list of all, couple, family (got {scopes!r})")
    if resamples < 1:
        raise ConfigError(f"--resamples must be at least 1 (got {resamples})")
    if len(runs) < 2:
        raise ConfigError("compare needs at least two run directories (or a study of two runs or more)")
    return chosen, rank_method(adjust, level)


def rank_method(adjust: str, level: float) -> Adjustment:
    """The rank groups' p-value adjustment (``--adjust``), once it and ``--level`` are known to be valid."""
    from rescue_bench.errors import ConfigError
    from rescue_bench.metrics.multiplicity import ADJUSTMENTS

    method = next((m for m in ADJUSTMENTS if m == adjust.strip().lower()), None)
    if method is None:
        raise ConfigError(f"--adjust: expected holm, bh or none (got {adjust!r})")
    if not 0.0 < level < 1.0:
        raise ConfigError(f"--level must lie in (0, 1) (got {level})")
    return method


def _compare_many(
    loaded: list[RunData],
    chosen: tuple[str, ...],
    every_metric: bool,
    resamples: int,
    seed: int,
    as_json: bool,
    method: Adjustment,
    level: float,
    ci: bool,
) -> None:
    """Three runs or more: every pair's difference, adjusted p-values and rank groups; from
    :data:`~rescue_bench.report.comparison.COMPACT_FROM` runs on (without ``--ci``), the values, groups and
    adjusted p-values alone."""
    from rescue_bench.report.comparison import (
        COMPACT_FROM,
        compact_tables,
        compare_many_run_data,
        matrix_tables,
    )
    from rescue_bench.report.terminal import make_console, print_tables

    result = compare_many_run_data(loaded, method=method, level=level, n_resamples=resamples, seed=seed)
    if as_json:
        echo(json.dumps(result.model_dump(mode="json"), indent=2))  # ASCII: valid JSON, controls escaped
        return
    if len(loaded) >= COMPACT_FROM and not ci:
        compact = compact_tables(result, scopes=chosen, every_metric=every_metric)
        print_tables(make_console(), [(table, 1) for table in compact])
        return
    tables = matrix_tables(result, scopes=chosen, every_metric=every_metric, numbered=True, ci=ci)
    print_tables(make_console(), [(table, 3 if table.key.startswith("compare_") else 2) for table in tables])


def _compare_two(
    a: RunData,
    b: RunData,
    chosen: tuple[str, ...],
    every_metric: bool,
    resamples: int,
    seed: int,
    as_json: bool,
) -> None:
    """Two runs: one row per task, scope and metric (A, B, A - B with its CI, McNemar's p)."""
    from rescue_bench.report.comparison import compare_run_data, comparison_table
    from rescue_bench.report.tables import display_names
    from rescue_bench.report.terminal import make_console, print_tables

    result = compare_run_data(a, b, n_resamples=resamples, seed=seed)
    if as_json:
        echo(json.dumps(result, indent=2))
        return
    name_a, name_b = display_names([a, b])
    table = comparison_table(result, (name_a, name_b), scopes=chosen, every_metric=every_metric)
    print_tables(make_console(), [(table, 3)], ci=True)


class _EchoWarnings(logging.Handler):
    """Shows the run directory's and the engine's warnings on stderr (lines set aside, a cache given up).

    Without it they would rely on logging's last-resort handler, which any other library's logging setup
    silences.
    """

    def emit(self, record: logging.LogRecord) -> None:
        echo(printable(record.getMessage()), err=True)


WARNING_LOGGERS = ("rescue_bench.rundir", "rescue_bench.engine")
"""Loggers whose warnings every command shows (the run directory is read by run, report, score, review)."""


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``compare`` to the root app, and show the run directory's warnings on stderr."""
    app.command("report")(report)
    app.command("compare", cls=with_flags(lambda: COMPARE_FLAGS))(compare)
    for name in WARNING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, _EchoWarnings) for h in logger.handlers):
            logger.addHandler(_EchoWarnings(logging.WARNING))
